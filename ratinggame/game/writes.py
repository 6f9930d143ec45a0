"""The writes of one game transaction, sent to the database in one statement where it can.

A rating changes four tables (the assignment closed, the pair's aggregates, the rater's scores,
the rating stored) and, when the answer also serves the next pair, two more rows (that pair's
slot count, its new assignment). Sent one by one, that is six round trips, each with the ORM's
cost in Python. ``Writes`` collects them as ORM updates and inserts (so every value is prepared
by its field, as ``save`` would) and sends them:

- on PostgreSQL, as one statement of data-modifying CTEs
  (``WITH w0 AS (UPDATE ... RETURNING 1), w1 AS (INSERT ... RETURNING id) SELECT ...``):
  one round trip, the same effect, since every part runs on the same snapshot and no two parts
  touch the same row;
- elsewhere (SQLite), one statement after the other.

What to write is decided in Python before (``ratinggame.game.rating``): nothing of the game's
rules is in SQL. The caller holds the row locks the writes rely on, inside a transaction.
"""

from django.db import connections
from django.db.models import Model, QuerySet
from django.db.models.sql import InsertQuery, UpdateQuery


class Writes:
    """Updates and inserts collected in order, then run together by ``run``."""

    def __init__(self, using: str = "default") -> None:
        self.using = using
        self._parts: list[tuple[str, tuple, Model | None]] = []  # (sql, params, inserted object)

    def update(self, queryset: QuerySet, **values) -> int:
        """Add ``queryset.update(**values)``; returns its place in ``run``'s answer (rows updated)."""
        query = queryset.query.chain(UpdateQuery)
        query.add_update_values(values)
        sql, params = query.get_compiler(self.using).as_sql()
        self._parts.append((sql, tuple(params), None))
        return len(self._parts) - 1

    def insert(self, obj: Model) -> int:
        """Add the INSERT of ``obj`` (as ``save`` would); ``run`` gives it its primary key."""
        meta = obj._meta
        fields = [field for field in meta.local_concrete_fields if field is not meta.auto_field and not field.generated]
        query = InsertQuery(type(obj))
        query.insert_values(fields, [obj])
        compiler = query.get_compiler(self.using)
        compiler.returning_fields = [meta.pk]
        ((sql, params),) = compiler.as_sql()
        self._parts.append((sql, tuple(params), obj))
        return len(self._parts) - 1

    def run(self) -> list[int]:
        """Send the writes; for each, in order, the rows updated or the new primary key."""
        connection = connections[self.using]
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql" and len(self._parts) > 1:
                sql, params = self._as_one_statement()
                cursor.execute(sql, params)
                results = list(cursor.fetchone())
            else:
                results = []
                for sql, params, obj in self._parts:
                    cursor.execute(sql, params)
                    results.append(cursor.rowcount if obj is None else cursor.fetchone()[0])
        for (_, _, obj), result in zip(self._parts, results, strict=True):
            if obj is not None:
                obj.pk = result
                obj._state.adding = False
                obj._state.db = self.using
        self._parts = []
        return results

    def _as_one_statement(self) -> tuple[str, tuple]:
        # Every part is SQL compiled by the ORM with its values as parameters; the names are ours.
        ctes, answers, params = [], [], []
        for index, (sql, part_params, obj) in enumerate(self._parts):
            name = f"w{index}"
            if obj is None:
                ctes.append(f"{name} AS ({sql} RETURNING 1)")
                answers.append(f"cardinality(ARRAY(SELECT 1 FROM {name}))")  # rows updated  # noqa: S608
            else:
                ctes.append(f"{name} AS ({sql})")  # the INSERT returns the primary key
                answers.append(f"(SELECT * FROM {name})")  # noqa: S608
            params.extend(part_params)
        return f"WITH {', '.join(ctes)} SELECT {', '.join(answers)}", tuple(params)
