"""Running the game's statements (``ratinggame.game.sql``): one driver cursor per thread on PostgreSQL.

``connection.cursor()`` does more than a statement needs each time it is called: it checks the
connection and its health, reads the settings twice, makes a driver cursor (closed after the
statement); and a fetch through Django's cursor wrapper builds a closure that translates the
driver's errors. For the five statements of a rating that was 5% of its instructions through
Django's handler (``bench/bench_web_instructions.py``).

Every game statement runs inside a transaction (the rating's, the serve's), and on PostgreSQL the
connection was checked when that transaction began: here the first game statement of a thread
has Django make a driver cursor (``create_cursor``: its time zone handling), kept for the
statements after it as long as its connection lives, and each statement runs it in Django's
wrapper of the moment (the query log's when queries are logged, as the tests count statements;
the execute wrappers; the errors translated). psycopg2's cursors hold every row of a result once
``execute`` returns: a fetch does no I/O and can fail only on a programming error, so rows are
read from the driver's cursor itself. Anything else (another database: SQLite steps its statement as rows are
fetched; a statement outside a transaction) takes Django's cursor, as Django makes it.

The kept cursor is the thread's (a thread-local: gone with the thread), replaced when its
connection has been closed or replaced. It refers to its connection and, through its time zone
handling, to Django's wrapper of it: kept on that wrapper instead, the two would make a cycle (a
wrapper that a finished thread left behind would keep its database connection open until the
garbage collector found it); kept in a table of the module, every connection it ever made.
"""

import threading

from ratinggame.game.prepared import execute_on

# This thread's driver cursor for the game's statements (``.cursor``).
_kept = threading.local()


def fetch_one(db, sql: str, params) -> tuple | None:
    """Run ``sql`` with ``params`` on Django's connection ``db``; its first row (None: no row)."""
    return _fetch(db, sql, params, "fetchone")


def fetch_all(db, sql: str, params) -> list:
    """Run ``sql`` with ``params`` on Django's connection ``db``; all its rows."""
    return _fetch(db, sql, params, "fetchall")


def _fetch(db, sql: str, params, fetch: str):
    driver = _driver_cursor(db)
    if driver is None:
        with db.cursor() as cursor:
            execute_on(db, cursor, sql, params)
            return getattr(cursor, fetch)()
    execute_on(db, _wrapped(db, driver), sql, params)
    return getattr(driver, fetch)()


def _driver_cursor(db):
    """This thread's driver cursor on ``db``'s connection, or None where Django's cursor is taken."""
    connection = db.connection
    if connection is None or db.vendor != "postgresql" or not db.in_atomic_block:
        return None
    driver = getattr(_kept, "cursor", None)
    if driver is None or driver.closed or driver.connection is not connection:
        driver = _kept.cursor = db.create_cursor()
    return driver


def _wrapped(db, driver):
    return db.make_debug_cursor(driver) if db.queries_logged else db.make_cursor(driver)
