"""The game's prepared statements (``ratinggame.game.sql``) against the schema: every model field a
statement or a write names exists, its column is in the statement and in the database's table
(as the migrations left it), and every statement is accepted by the database (``EXPLAIN``, which
plans it without running it). A migration that renames or drops a column fails here, not in play."""

import re
import warnings
from datetime import UTC, datetime, timedelta, timezone

import pytest
from django.db import connection, models

from ratinggame.game import sql

pytestmark = pytest.mark.django_db

EXPLAIN = {"postgresql": "EXPLAIN ", "sqlite": "EXPLAIN QUERY PLAN "}


def _columns_in_database(model) -> set[str]:
    with connection.cursor() as cursor:
        return {column.name for column in connection.introspection.get_table_description(cursor, model._meta.db_table)}


def _explained(text: str) -> None:
    named = set(re.findall(r"%\((\w+)\)s", text))  # the claim's (each value sent once)
    params = dict.fromkeys(named) if named else [None] * text.count("%s")
    with connection.cursor() as cursor:
        cursor.execute(EXPLAIN[connection.vendor] + text, params)
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


def _samples(field) -> list:
    """Values of every kind a parameter of ``field`` may be given, plain and not."""
    if isinstance(field, models.DateTimeField):
        aware = datetime(2026, 12, 1, 12, 30, tzinfo=UTC)
        return [aware, aware.astimezone(timezone(timedelta(hours=5))), aware.replace(tzinfo=None), None]
    if isinstance(field, models.JSONField):
        return [{"a": [1, 2]}, [3.5], None, "text"]
    if isinstance(field, models.BooleanField):
        return [True, False, None, 1, 0]
    if isinstance(field, (models.CharField, models.TextField)):
        return ["game", "", None, 5]
    return [0, 7, None, "7", True]  # whole numbers: a string or a bool goes through the field


def _comparable(value):
    return getattr(value, "adapted", value)  # a JSON value's driver adapter, by what it adapts


def test_each_parameter_goes_out_as_its_field_prepares_it():
    """Plain values of plain fields skip their field's preparation; what goes out is the same."""
    vendor = connection.vendor
    plans = [sql._write_plan(vendor, (write,)) for write in sql.WRITES]
    statements = [sql.STATEMENTS[name](vendor) for name in sorted(sql.STATEMENTS)]
    shapes = [found for plan in plans for found in plan._preparers] + [found._preparers for found in statements]
    checked = 0
    for preparers in shapes:
        for field, _ in preparers:
            if field is None:
                continue
            for value in _samples(field):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)  # a naive timestamp: Django warns
                    ours = sql.prepared(((field, sql.plain_type(field, vendor)),), [value], connection)[0]
                    theirs = field.get_db_prep_save(value, connection)
                assert _comparable(ours) == _comparable(theirs), (field, value)
                assert type(ours) is type(theirs), (field, value)
                checked += 1
    assert checked > 100
