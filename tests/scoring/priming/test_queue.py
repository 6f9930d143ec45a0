"""Asking for priming without a broker (the laptop default): the web process never loads a model."""

import ast
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

IMPORT_WITHOUT_BROKER = """
import sys, django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from pathlib import Path
from PIL import Image
from ratinggame.pairs.importing import import_manifest
from ratinggame.models import CaptionPair
folder = Path(sys.argv[1])
Image.new("RGB", (8, 8), (200, 10, 10)).save(folder / "red.png")
(folder / "manifest.csv").write_text("image,caption\\nred.png,a red square\\n")
report = import_manifest(manifest=folder / "manifest.csv", images_dir=folder)
pair = CaptionPair.objects.get()
heavy = [m for m in ("torch", "open_clip", "torchvision") if m in sys.modules]
print(repr((heavy, pair.priming_status, pair.priming_error, report.priming_note)))
"""


def test_importing_with_a_priming_model_but_no_broker_loads_no_model_and_says_how_to_prime(tmp_path):
    environment = {
        key: value for key, value in os.environ.items() if not key.startswith(("CELERY_", "DATABASE_", "RATINGGAME_"))
    }
    environment.update(
        {
            "DJANGO_SETTINGS_MODULE": "ratinggame.settings",
            "RATINGGAME_VAR_DIR": str(tmp_path),
            "MEDIA_ROOT": str(tmp_path / "media"),
            # A model is configured: running the priming task inline would load it in this process.
            "RATINGGAME_PRIMING_MODEL": "ViT-B-32",
            "RATINGGAME_PRIMING_PRETRAINED": "openai",
        }
    )
    result = subprocess.run(
        [sys.executable, "-c", IMPORT_WITHOUT_BROKER, str(tmp_path)],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    heavy, status, error, note = ast.literal_eval(result.stdout.strip().splitlines()[-1])
    assert heavy == []
    assert status == "pending"
    assert "no task broker is configured" in error and "manage.py prime_pairs" in error
    assert note.startswith("1 game pair(s) waiting") and "manage.py prime_pairs" in note
