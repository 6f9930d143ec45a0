"""The API page's worked script (docs/api.md), run as written with curl and jq against a site:
the documentation's own test runs it against a live server, the reference deployment's through
nginx over HTTPS."""

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from ratinggame.models import CaptionPair

API_PAGE = Path(__file__).resolve().parents[2] / "docs" / "api.md"
WRITTEN_SITE = "SITE=https://ratings.example.org"

needs_curl_and_jq = pytest.mark.skipif(not (shutil.which("curl") and shutil.which("jq")), reason="needs curl and jq")


def script_block() -> str:
    """The first shell block after "A script plays like this"."""
    text = API_PAGE.read_text()
    after = text[text.index("A script plays like this") :]
    return re.search(r"```sh\n(.*?)```", after, re.S)[1]


def play_the_script(site: str, tutorial_pair: CaptionPair, env: dict[str, str] | None = None) -> dict:
    """Run the script against ``site``; check that it consented, was served ``tutorial_pair`` and
    rated it 4; answer the submission's JSON."""
    block = script_block()
    assert WRITTEN_SITE in block
    script = block.replace(WRITTEN_SITE, f"SITE={site}")
    ran = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script], capture_output=True, text=True, timeout=60, check=False, env=env
    )
    assert ran.returncode == 0, ran.stderr
    lines = ran.stdout.strip().splitlines()
    assert lines[-3:-1] == ["tutorial", tutorial_pair.caption]  # the step after consent, the pair served
    answer = json.loads(lines[-1])
    assert (answer["stage"], answer["value"], answer["reference"]) == ("tutorial", 4, tutorial_pair.expert_rating)
    assert answer["already_rated"] is False and "next" in answer
    return answer
