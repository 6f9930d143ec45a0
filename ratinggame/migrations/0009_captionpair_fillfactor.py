"""Three fifths of each page of the pairs' table left free on PostgreSQL (fillfactor 40).

Priming claims a run of consecutive pairs in one statement (status running, the claim's time),
then stores their primes (status done, the primes): two new versions of every pair row, of
columns no index holds. With room on the row's own page, PostgreSQL writes such a version as a
heap-only tuple (HOT): no new entry in any of the table's five indexes. On a full page (the
default, 100) each version goes to another page with a new entry in every index. A page must
hold each row twice over, then (the first version pruned once the claim committed) its claimed
and its primed versions, each larger than the row was (the claim's time, then the primes): 40%
full leaves room for that down to rows of about 110 bytes (a pair with a caption of a few
words). Pages written before this migration keep their layout until they are rewritten.
"""

from django.db import migrations

FILLFACTOR = 40


def _table(apps, schema_editor) -> str:
    return schema_editor.quote_name(apps.get_model("ratinggame", "CaptionPair")._meta.db_table)


def fillfactor_set(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"ALTER TABLE {_table(apps, schema_editor)} SET (fillfactor = {FILLFACTOR})")


def fillfactor_default(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"ALTER TABLE {_table(apps, schema_editor)} RESET (fillfactor)")


class Migration(migrations.Migration):
    dependencies = [
        ("ratinggame", "0008_importjob_heartbeat_at"),
    ]

    operations = [migrations.RunPython(fillfactor_set, fillfactor_default)]
