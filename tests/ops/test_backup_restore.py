"""The backup and restore procedure of docs/operators/backup.md, run as written (bash, pg_dump,
pg_restore, tar) against the test database on a real PostgreSQL server: the demo's pairs, images,
model primes and ratings, a participant and a paid bonus batch come back whole, as the inventory
counts them, into a new database and media folder."""

import io
import json
import re
import shutil
import subprocess
import uuid
from decimal import Decimal
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from annotators.models import BonusBatch, BonusState, Participation
from ratinggame.inventory import site_inventory
from tests.ratinggame.journey_helpers import rater

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "operators" / "backup.md"


def procedure() -> str:
    return re.search(r"```sh\n(.*?)```", PAGE.read_text(), re.S)[1]


def database_url() -> str:
    conf = connection.settings_dict
    password = f":{conf['PASSWORD']}" if conf.get("PASSWORD") else ""
    return f"postgres://{conf['USER']}{password}@{conf['HOST'] or '127.0.0.1'}:{conf['PORT'] or 5432}/{conf['NAME']}"


def test_a_backup_restores_whole_into_a_new_database(require_postgres, settings, tmp_path):
    for tool in ("pg_dump", "pg_restore", "psql", "tar"):
        assert shutil.which(tool), f"{tool} is needed for the backup procedure"
    settings.RATINGGAME = {**settings.RATINGGAME, "DEMO_MODE": True}
    call_command("load_demo", stdout=io.StringIO())
    user = rater("game")
    Participation.objects.create(
        profile=user.rater,
        platform="prolific",
        external_id="60a1b2c3d4e5f60718293a4b",
        entered_at=timezone.now(),
        last_entry_at=timezone.now(),
    )
    BonusBatch.objects.create(
        study_id="s1",
        up_to=timezone.now().date(),
        currency="GBP",
        total=Decimal("12.34"),
        state=BonusState.PAID,
        created_at=timezone.now(),
    )
    before = site_inventory()
    assert (
        before["ratings"]["count"] > 100 and before["images"]["count"] == 20 and before["images"]["files_missing"] == 0
    )
    restored = f"restored_{uuid.uuid4().hex[:12]}"
    env = {
        "PATH": "/usr/bin:/bin",
        "DATABASE_URL": database_url(),
        "MEDIA_ROOT": str(settings.MEDIA_ROOT),
        "BACKUP": str(tmp_path / "backup"),
        "RESTORED": restored,
        "RESTORE_MEDIA_ROOT": str(tmp_path / "media-restored"),
        "DJANGO_SETTINGS_MODULE": "ratinggame.settings",
    }
    try:
        ran = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", procedure()],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-3000:]
        assert ran.stdout.strip().endswith("restored whole")
        after = json.loads((tmp_path / "backup" / "restored.json").read_text())
        assert after == json.loads(json.dumps(before))  # as the command prints it
        assert after["bonus_batches"] == {"count": 1, "paid_total": "12.34"}
        assert sorted(p.name for p in (tmp_path / "media-restored").rglob("*") if p.is_file()) == sorted(
            p.name for p in Path(settings.MEDIA_ROOT).rglob("*") if p.is_file()
        )
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f'DROP DATABASE IF EXISTS "{restored}"')
