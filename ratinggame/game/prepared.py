"""The game's hot statements as server-side prepared statements on PostgreSQL.

PostgreSQL plans every statement it is sent. The rating's claim (``assignment.claim``: eight
probes of the serving index in one UNION ALL) took longer to plan than to run: ~0.6 ms of
planning for ~0.55 ms of execution; ~1.1 ms for the claim that passes over an image (sixteen
probes), each rating. Prepared once per connection, PostgreSQL plans it a few times, then keeps one generic
plan (its ``plan_cache_mode`` rule) and runs it with no planning at all.

psycopg2, Django's driver here, has no prepared statements of its own: the statement is
prepared in SQL (``PREPARE name AS ...`` with ``$n`` parameters, the parameter types inferred
from the columns they meet) the first time a connection runs it, and then sent as ``EXECUTE
name(%s, ...)`` with the same parameters as before, through the same cursor (Django's query log
and execute wrappers see it). A prepared statement outlives a rolled-back transaction; it is
remembered per connection object, so a new connection (a reconnect, ``CONN_MAX_AGE``) prepares
again.

Not behind a transaction-mode pooler (PgBouncer's ``pool_mode = transaction``), where the next
transaction may run on a server connection that never saw the ``PREPARE``: the setting that says
so, ``DATABASE_TRANSACTION_POOLING=1``, turns them off (``RATINGGAME["PREPARED_STATEMENTS"]``).
Every other database runs the SQL as it is.

A migration that changes the type of a column these statements read makes PostgreSQL refuse
their prepared plans ("cached plan must not change result type") on the connections that
prepared them before it: restart the web processes after such a migration, as a deploy does.
"""

import functools
import hashlib
import re
import weakref

from django.conf import settings

# The statements each connection has prepared, by the connection (the driver's own object).
_prepared: "weakref.WeakKeyDictionary[object, set[str]]" = weakref.WeakKeyDictionary()


@functools.cache
def prepared_form(sql: str, count: int) -> tuple[str, str, str]:
    """(name, PREPARE statement, EXECUTE template) of ``sql`` with ``count`` parameters.

    ``sql`` is the driver's form (``%s`` placeholders, ``%%`` for a percent sign); the name is
    the SQL's digest, so every process names a statement alike (``pg_prepared_statements``).
    """
    numbered = 0

    def number(found: re.Match) -> str:
        nonlocal numbered
        if found.group() == "%%":
            return "%"
        numbered += 1
        return f"${numbered}"

    body = re.sub(r"%[s%]", number, sql)
    if numbered != count:
        raise ValueError(f"the SQL has {numbered} placeholders for {count} parameters")
    name = "rg_" + hashlib.blake2s(sql.encode(), digest_size=10).hexdigest()
    arguments = f"({', '.join(['%s'] * count)})" if count else ""
    return name, f"PREPARE {name} AS {body}", f"EXECUTE {name}{arguments}"


def is_preparation(sql: str) -> bool:
    """Whether ``sql`` (as a query log shows it) is a connection's one-off ``PREPARE``, not a
    statement of the work itself: what statement counts leave out."""
    return sql.startswith("PREPARE ")


def execute_on(db, cursor, sql: str, params) -> None:
    """``execute`` on a cursor of Django's connection ``db``."""
    execute(cursor, db.connection, db.vendor, sql, params)


def execute(cursor, raw_connection, vendor: str, sql: str, params) -> None:
    """Run ``sql`` with ``params`` on ``cursor``, prepared where this module's docstring says.

    ``raw_connection`` is the driver's connection the cursor belongs to (Django's
    ``connection.connection``), which a prepared statement lives as long as.
    """
    if vendor != "postgresql" or not settings.RATINGGAME["PREPARED_STATEMENTS"]:
        cursor.execute(sql, params)
        return
    name, prepare, run = prepared_form(sql, len(params))
    done = _prepared.get(raw_connection)
    if done is None:
        done = _prepared[raw_connection] = set()
    if name not in done:
        cursor.execute(prepare)
        done.add(name)
    cursor.execute(run, params)
