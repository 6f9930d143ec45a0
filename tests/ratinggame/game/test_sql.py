"""The game's prepared statements (``ratinggame.game.sql``) against the schema: every model field a
statement or a write names exists, its column is in the statement and in the database's table
(as the migrations left it), and every statement is accepted by the database (``EXPLAIN``, which
plans it without running it). A migration that renames or drops a column fails here, not in play."""

import pytest
from django.db import connection

from ratinggame.game import sql

pytestmark = pytest.mark.django_db

EXPLAIN = {"postgresql": "EXPLAIN ", "sqlite": "EXPLAIN QUERY PLAN "}


def _columns_in_database(model) -> set[str]:
    with connection.cursor() as cursor:
        return {column.name for column in connection.introspection.get_table_description(cursor, model._meta.db_table)}


def _explained(text: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute(EXPLAIN[connection.vendor] + text, [None] * text.count("%s"))
        assert cursor.fetchall()


@pytest.mark.parametrize("name", sorted(sql.STATEMENTS))
def test_each_statement_names_columns_the_models_and_the_database_have(name):
    statement = sql.STATEMENTS[name](connection.vendor)
    assert statement.names, name
    for model, field_names in statement.names.items():
        in_database = _columns_in_database(model)
        for field_name in field_names:
            column = model._meta.get_field(field_name).column  # FieldDoesNotExist: a model changed
            assert f'"{column}"' in statement.sql, (name, model.__name__, field_name)
            assert column in in_database, (name, model.__name__, field_name)
    _explained(statement.sql)


@pytest.mark.parametrize("write", sql.WRITES, ids=lambda write: f"{write.model.__name__}:{','.join(write.fields)}")
def test_each_write_names_columns_the_database_has_and_is_accepted(write):
    in_database = _columns_in_database(write.model)
    assert {field.column for field in write.param_fields()} <= in_database
    _explained(write.sql())


def test_the_rows_read_columns_the_database_has():
    for shape in (sql.PROFILE, sql.PAIR, sql.IMAGE, sql.ASSIGNMENT, sql.RATING):
        assert {field.column for field in shape.fields} <= _columns_in_database(shape.model), shape.row_type
