"""The game's hot statements as server-side prepared statements on PostgreSQL.

PostgreSQL plans every statement it is sent. The rating's claim (``assignment.claim_statements``:
eight probes of the serving index in one UNION ALL) took longer to plan than to run, every
rating. Prepared once per connection and run on its generic plan (below), it is not planned
again.

psycopg2, Django's driver here, has no prepared statements of its own: the statement is
prepared in SQL (``PREPARE name AS ...`` with ``$n`` parameters, the parameter types inferred
from the columns they meet) the first time a connection runs it, and then sent as ``EXECUTE
name(%s, ...)`` with the same parameters as before, through the same cursor (Django's query log
and execute wrappers see it). A prepared statement outlives a rolled-back transaction; it is
remembered per connection object, so a new connection (a reconnect, ``CONN_MAX_AGE``) prepares
again.

Generic plans from the first run on: each new connection sets ``plan_cache_mode`` to
``force_generic_plan`` (``generic_plans``, one statement per connection; it concerns prepared
statements only, and Django prepares none of its own). PostgreSQL's own rule keeps planning a
statement whose custom plans it estimates cheaper than the generic one, and the claim's window
(a range of keys of unknown width before the run) made it so: for a rater of 2,000 ratings the
claim took 4.1 ms with a plan per run against 0.95 ms on the generic plan (medians of 20).
A generic plan is made with the tables' sizes and statistics of its first run: PostgreSQL makes
it again after an ANALYZE of a table it reads (autovacuum's, as tables grow), and a connection
lives at most ``DATABASE_CONN_MAX_AGE`` seconds (60). Where neither happens, a plan made on the
empty tables of a new study reads the assignments whole for each pair it looks at (5 ms a claim
after 1,000 ratings in ``bench/bench_claim_history.py`` on one connection, 0.7 ms on a new one).

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
from collections.abc import Mapping

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver

# The statements each connection has prepared, by the connection (the driver's own object).
_prepared: "weakref.WeakKeyDictionary[object, set[str]]" = weakref.WeakKeyDictionary()


# A placeholder of the driver's form: positional (%s) or named (%(name)s), or a percent sign (%%).
_PLACEHOLDER = re.compile(r"%(?:\((\w+)\))?s|%%")


@functools.cache
def prepared_form(sql: str, count: int | None) -> tuple[str, str, str]:
    """(name, PREPARE statement, EXECUTE template) of ``sql`` with ``count`` positional parameters,
    or (``count`` None) with named ones.

    ``sql`` is the driver's form (``%s`` placeholders, or ``%(name)s`` ones, which the parameters
    give as a mapping; ``%%`` for a percent sign). A named parameter is numbered once, where it first
    appears, and every use of it is the same ``$n``: a value the statement uses in several places
    (the rater, the serve's start point in each probe of the claim) is sent once. The name is the
    SQL's digest, so every process names a statement alike (``pg_prepared_statements``).
    """
    numbers: dict[str, int] = {}
    positional = 0

    def number(found: re.Match) -> str:
        nonlocal positional
        if found.group() == "%%":
            return "%"
        if found.group(1) is None:
            positional += 1
            return f"${positional}"
        return f"${numbers.setdefault(found.group(1), len(numbers) + 1)}"

    body = _PLACEHOLDER.sub(number, sql)
    if positional and numbers:
        raise ValueError("the SQL mixes positional and named placeholders")
    if count is None and positional:
        raise ValueError(f"the SQL has {positional} positional placeholders for named parameters")
    if count is not None and (numbers or positional != count):
        raise ValueError(f"the SQL has {positional or len(numbers)} placeholders for {count} parameters")
    name = "rg_" + hashlib.blake2s(sql.encode(), digest_size=10).hexdigest()
    arguments = [f"%({key})s" for key in numbers] if count is None else ["%s"] * count
    run = f"EXECUTE {name}({', '.join(arguments)})" if arguments else f"EXECUTE {name}"
    return name, f"PREPARE {name} AS {body}", run


@functools.cache
def enabled() -> bool:
    """Whether prepared statements are on (``RATINGGAME["PREPARED_STATEMENTS"]``): read once, and
    again after a change of settings, not before every statement of every rating."""
    return bool(settings.RATINGGAME["PREPARED_STATEMENTS"])


@receiver(setting_changed)
def _settings_changed(*, setting, **kwargs) -> None:
    if setting == "RATINGGAME":
        enabled.cache_clear()


GENERIC_PLANS = "SET plan_cache_mode = force_generic_plan"


def generic_plans(sender, connection, **kwargs) -> None:
    """On each new connection (Django's ``connection_created``, in autocommit, so that no rolled
    back transaction takes it back): prepared statements run their generic plan, for the
    reasons the module's docstring gives."""
    if connection.vendor == "postgresql" and enabled():
        with connection.cursor() as cursor:
            cursor.execute(GENERIC_PLANS)


def is_preparation(sql: str) -> bool:
    """Whether ``sql`` (as a query log shows it) is one of a connection's one-off statements (a
    ``PREPARE``, the generic plans' setting), not a statement of the work itself: what statement
    counts leave out."""
    return sql.startswith("PREPARE ") or sql == GENERIC_PLANS


def execute_on(db, cursor, sql: str, params) -> None:
    """``execute`` on a cursor of Django's connection ``db``."""
    execute(cursor, db.connection, db.vendor, sql, params)


def execute(cursor, raw_connection, vendor: str, sql: str, params) -> None:
    """Run ``sql`` with ``params`` (a sequence, or a mapping for named placeholders) on ``cursor``,
    prepared where this module's docstring says.

    ``raw_connection`` is the driver's connection the cursor belongs to (Django's
    ``connection.connection``), which a prepared statement lives as long as.
    """
    if vendor != "postgresql" or not enabled():
        cursor.execute(sql, params)
        return
    name, prepare, run = prepared_form(sql, None if isinstance(params, Mapping) else len(params))
    done = _prepared.get(raw_connection)
    if done is None:
        done = _prepared[raw_connection] = set()
    if name not in done:
        cursor.execute(prepare)
        done.add(name)
    cursor.execute(run, params)
