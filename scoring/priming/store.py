"""The priming runner's claims and batch writes on PostgreSQL, one statement each.

At a GPU's pace (thousands of pairs a second) each statement, round trip and commit per batch
shows: the portable path of ``scoring.priming.runner`` claims with three statements, reads each
batch's rows with a fourth and stores them with a locking SELECT, an INSERT and an UPDATE in a
transaction. Here a chunk of pairs is claimed and its rows read by one UPDATE ... RETURNING, and
a batch's ModelRating rows, ``pair.primes`` and status are written by one statement whose
values travel as arrays (``unnest``), under the same conditions: a claim takes only claimable
rows no other worker is claiming (SKIP LOCKED); a store locks the batch's pairs in id order and
writes only those still carrying this run's claim and without primes.

Table and column names, and the array types, come from the models.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import datetime

from django.db import connection
from django.db.models import Q
from django.db.models.sql import Query
from django.utils import timezone

from ratinggame.models import CaptionPair, Image, PrimingStatus
from scoring.models import ModelRating

# The ModelRating fields a batch gives, one array each, in this order; created_at is the store's time.
RATING_FIELDS = ("pair", "slot", "model_identity", "metric", "raw_score", "value", "explanation", "calibration")


def _name(model, field: str) -> str:
    return connection.ops.quote_name(model._meta.get_field(field).column)


def array_literal(values: Sequence) -> str:
    """``values`` in PostgreSQL's array input syntax, one query parameter cast to an array type.

    psycopg2 sends a list as ARRAY[v1, v2, ...]: one constant per element for the client to
    adapt and the server to parse and plan (milliseconds for a batch's thousands of values);
    the literal is parsed by the array type's input function in one go. Numbers go as ``str``
    writes them (the shortest text that reads back as the same double, for a numpy scalar too,
    whose ``repr`` names its type); text is quoted and escaped, each distinct text once (a batch
    repeats its scorers' names on every row); None is NULL.
    """
    first = next((value for value in values if value is not None), None)
    if isinstance(first, str):
        quoted = {
            value: "NULL" if value is None else '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
            for value in set(values)
        }
        return "{" + ",".join(map(quoted.__getitem__, values)) + "}"
    if first is not None and None not in values:
        return "{" + ",".join(map(str, values)) + "}"
    return "{" + ",".join("NULL" if value is None else str(value) for value in values) + "}"


def primes_json(values: Sequence[float]) -> str:
    """A pair's primes as JSON text: what ``json.dumps`` writes for a list of finite floats (``str``
    of a float is its shortest exact text, as json's), in 0.55 of its time (timeit, two primes)."""
    return "[" + ", ".join(map(str, values)) + "]"


def primes_by_pair(columns: Sequence[list]) -> dict[int, list[float]]:
    """Each pair's calibrated primes, by slot, from a batch's RATING_FIELDS columns."""
    primes: dict[int, list[float]] = {}
    for pk, value in zip(columns[0], columns[RATING_FIELDS.index("value")], strict=True):
        primes.setdefault(pk, []).append(value)
    return primes


def claim_rows(ids: Sequence[int], claimable: Q, now: datetime) -> list[tuple]:
    """Claim the pairs among ``ids`` that ``claimable`` selects and no other worker is claiming;
    returns their (id, image sha256, image file name, caption, references as stored), by id.

    One UPDATE: its subquery locks the claimable rows (FOR NO KEY UPDATE, as the game locks pairs,
    so that no foreign key check on a pair waits on it; SKIP LOCKED) and PostgreSQL checks
    ``claimable`` again on the latest version of each row it locks, so a row another worker
    claimed meanwhile is left out. ``references`` comes back as stored (JSON text). The ids are
    given to the UPDATE itself as well, so that it finds the rows by the primary key instead of
    hashing the subquery's result against the whole table.
    """
    query = Query(CaptionPair)
    compiler = query.get_compiler(connection=connection)
    condition, params = compiler.compile(query.build_where(claimable))
    ids_literal = array_literal(list(ids))
    with connection.cursor() as cursor:
        cursor.execute(
            _claim_sql().format(claimable=condition),
            [PrimingStatus.RUNNING, now, ids_literal, ids_literal, *params],
        )
        rows = cursor.fetchall()
    rows.sort()
    return rows


@functools.cache
def _claim_sql() -> str:
    pair, image = (connection.ops.quote_name(m._meta.db_table) for m in (CaptionPair, Image))
    p = functools.partial(_name, CaptionPair)
    i = functools.partial(_name, Image)
    ids = f"ANY(%s::{CaptionPair._meta.pk.db_type(connection)}[])"
    return (
        f"UPDATE {pair} AS p SET {p('priming_status')} = %s, {p('priming_claimed_at')} = %s, "  # noqa: S608 - names from the models
        f"{p('priming_error')} = '' FROM {image} AS i "
        f"WHERE i.{i('id')} = p.{p('image')} AND p.{p('id')} = {ids} "
        f"AND p.{p('id')} IN (SELECT {pair}.{p('id')} FROM {pair} WHERE {pair}.{p('id')} = {ids} "
        f"AND {{claimable}} FOR NO KEY UPDATE SKIP LOCKED) "
        f"RETURNING p.{p('id')}, i.{i('sha256')}, i.{i('file')}, p.{p('caption')}, p.{p('references')}"
    )


def batch_store(columns: Sequence[list], claimed_at: datetime) -> int:
    """Store a batch's primes: ``columns`` are the RATING_FIELDS as lists, one entry per prime,
    each pair's slots in order. Returns how many pairs were written.

    One statement: it sets ``primes`` (the values by slot, as JSON text) and status done of the
    batch's pairs still claimed by this run (``claimed_at``) and without primes, and inserts their
    ModelRating rows. Pairs another run took over, or already primed, are left alone.
    """
    primes = primes_by_pair(columns)
    ids = array_literal(list(primes))
    primes_text = array_literal([primes_json(values) for values in primes.values()])
    with connection.cursor() as cursor:
        cursor.execute(
            _store_sql(),
            [
                *(array_literal(column) for column in columns),
                ids,
                primes_text,
                PrimingStatus.DONE,
                PrimingStatus.RUNNING,
                claimed_at,
                timezone.now(),
            ],
        )
        return cursor.fetchone()[0]


def _array_type(field) -> str:
    return "text" if field.get_internal_type() in ("CharField", "TextField") else field.db_type(connection)


@functools.cache
def _store_sql() -> str:
    quote = connection.ops.quote_name
    pair_table, rating_table = quote(CaptionPair._meta.db_table), quote(ModelRating._meta.db_table)
    fields = [ModelRating._meta.get_field(name) for name in RATING_FIELDS]
    created = ModelRating._meta.get_field("created_at")
    # Text goes as text[]: a cast to varchar(n)[] would cut a longer value without a word, where the
    # INSERT into the column refuses it (as the portable path's does).
    arrays = ", ".join(f"%s::{_array_type(field)}[]" for field in fields)
    names = ", ".join(quote(field.column) for field in fields)
    rating_pair = quote(ModelRating._meta.get_field("pair").column)
    p = functools.partial(_name, CaptionPair)
    id_type = CaptionPair._meta.pk.db_type(connection)
    primes_type = CaptionPair._meta.get_field("primes").db_type(connection)
    # The UPDATE takes the row locks, in the order of u (ids ascending): the planner expects few of
    # the batch's rows to carry the claim, so it must not be offered to drive the join from the
    # pairs' index (it would scan u once per pair). It checks the claim again on the latest
    # version of a row another run changed meanwhile; the INSERT takes the pairs it updated.
    return (
        f"WITH r ({names}) AS (SELECT * FROM unnest({arrays})), "  # noqa: S608 - names from the models
        f"u (id, primes) AS (SELECT * FROM unnest(%s::{id_type}[], %s::{primes_type}[])), "
        f"done AS (UPDATE {pair_table} AS p SET {p('primes')} = u.primes, {p('priming_status')} = %s, "
        f"{p('priming_error')} = '' FROM u WHERE p.{p('id')} = u.id "
        f"AND p.{p('priming_status')} = %s AND p.{p('priming_claimed_at')} = %s "
        f"AND NOT EXISTS (SELECT 1 FROM {rating_table} AS m WHERE m.{rating_pair} = p.{p('id')}) "
        f"RETURNING p.{p('id')} AS id), "
        f"inserted AS (INSERT INTO {rating_table} ({names}, {quote(created.column)}) "
        f"SELECT r.*, %s::{created.db_type(connection)} FROM r JOIN done ON done.id = r.{rating_pair}) "
        f"SELECT count(*) FROM done"
    )
