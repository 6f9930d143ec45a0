"""The API page's worked requests, run as written (curl and jq in bash) against a live server: a
script signs up, consents, is served its first pair and rates it after the server's 3 seconds."""

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from ratinggame.models import Rating
from tests.factories import TutorialPairFactory

pytestmark = pytest.mark.django_db(transaction=True)

API_PAGE = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def script_block() -> str:
    """The first shell block after "A script plays like this"."""
    text = API_PAGE.read_text()
    after = text[text.index("A script plays like this") :]
    return re.search(r"```sh\n(.*?)```", after, re.S)[1]


@pytest.mark.skipif(not (shutil.which("curl") and shutil.which("jq")), reason="needs curl and jq")
def test_the_api_pages_script_plays_as_written(live_server, settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    pair = TutorialPairFactory(caption="A red box on green grass", expert_rating=4)
    block = script_block()
    assert "SITE=https://ratings.example.org" in block
    script = block.replace("SITE=https://ratings.example.org", f"SITE={live_server.url}")
    ran = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert ran.returncode == 0, ran.stderr
    lines = ran.stdout.strip().splitlines()
    assert lines[-3:-1] == ["tutorial", pair.caption]  # the step after consent, the pair served
    answer = json.loads(lines[-1])
    assert (answer["stage"], answer["value"], answer["reference"], answer["points"]) == ("tutorial", 4, 4, 2)
    assert answer["already_rated"] is False and "next" in answer
    assert Rating.objects.get().rater.username == "rater7"
