"""An import killed while it writes (issue 15, part 3), on PostgreSQL with a real process.

``manage.py import_pairs`` runs in a child process on the test database and is killed
(SIGKILL) once it has written some image files. Nothing of it is in the database; the files it
wrote are served to no one; run again, the import lands every image on its content's name (no
``<sha256>_KnY2ofM.png`` copies); and the sweep leaves exactly the files the rows name.
"""

import os
import signal
import subprocess
import sys
import time
from datetime import timedelta

import numpy as np
import pytest
from django.core.management import call_command
from PIL import Image as PILImage

from ratinggame.models import CaptionPair, Image
from ratinggame.pairs.services import media_orphans_delete
from tests.live_process import ROOT, server_env

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

ROWS = 400


def image_files(settings) -> list[str]:
    folder = settings.MEDIA_ROOT / "images"
    return (
        sorted(str(p.relative_to(settings.MEDIA_ROOT)) for p in folder.rglob("*") if p.is_file())
        if folder.exists()
        else []
    )


def test_an_import_killed_while_writing_leaves_nothing_served_and_the_rerun_reuses_the_names(
    require_postgres, tmp_path, settings, client
):
    images = tmp_path / "images"
    images.mkdir()
    rng = np.random.default_rng(0)
    for index in range(ROWS):
        PILImage.fromarray(rng.integers(0, 256, (48, 64, 3), dtype=np.uint8), "RGB").save(images / f"{index}.png")
    manifest = tmp_path / "pairs.csv"
    manifest.write_text("image,caption\n" + "".join(f"{i}.png,photo number {i}\n" for i in range(ROWS)))

    env = server_env(media_root=settings.MEDIA_ROOT, min_seconds=3)
    command = [sys.executable, "manage.py", "import_pairs", str(manifest), "--images", str(images)]
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while process.poll() is None and len(image_files(settings)) < 20:
        assert time.monotonic() < deadline, "the import wrote no image file in time"
        time.sleep(0.002)
    assert process.poll() is None, f"the import ended before it could be killed: {process.stderr.read()[-2000:]}"
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)

    left = [name for name in image_files(settings) if not name.rsplit("/", 1)[-1].startswith(".incoming-")]
    assert left and not Image.objects.exists() and not CaptionPair.objects.exists()
    for name in left:
        assert client.get(f"/media/{name}").status_code == 404

    call_command("import_pairs", str(manifest), "--images", str(images))
    named = sorted(Image.objects.values_list("file", flat=True))
    assert len(named) == ROWS and CaptionPair.objects.count() == ROWS
    assert set(left) <= set(named)  # the same content landed on the same names, no suffixed copies
    assert not [name for name in named if "_" in name.rsplit("/", 1)[-1]]
    media_orphans_delete(older_than=timedelta(0))  # a file half-written when the process died
    copies = [copy["name"] for copies in Image.objects.values_list("derivatives", flat=True) for copy in copies]
    assert image_files(settings) == sorted(named + copies)  # every file a row names, nothing else
