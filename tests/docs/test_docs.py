"""The documentation builds with MkDocs in strict mode (a broken link, a missing anchor or a page
left out of the navigation fails), its API reference renders the schema the code describes, and
its configuration pages name every environment variable the settings module reads."""

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = ROOT / "ratinggame" / "settings.py"
CONFIGURATION = ROOT / "docs" / "operators" / "configuration.md"
STUDY = ROOT / "docs" / "researchers" / "prolific.md"
STUDY_PREFIX = "RATINGGAME_STUDY_"  # the study's table names each variable by what follows it


def test_the_documentation_builds_in_strict_mode(tmp_path):
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "NO_MKDOCS_2_WARNING": "1"},
        check=False,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    assert (tmp_path / "site" / "researchers" / "prolific" / "index.html").exists()
    reference = (tmp_path / "site" / "api-reference" / "index.html").read_text()
    assert "/api/game/submit" in reference and "ConsentRequest" in reference  # the schema, rendered


def test_the_api_references_schema_is_the_one_the_code_describes(tmp_path):
    """docs/openapi.yaml is what ``make openapi`` writes today: an endpoint or field changed
    without ``make openapi`` fails here. Both describe the embedded default (SQLite): a field's
    integer range is the database's, so PostgreSQL's schema differs in its bounds."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_", "DJANGO_", "RATINGGAME_"))}
    env |= {"RATINGGAME_VAR_DIR": str(tmp_path / "var")}
    written = tmp_path / "openapi.yaml"
    command = [sys.executable, "manage.py", "spectacular", "--file", str(written), "--validate"]
    made = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert made.returncode == 0, made.stderr[-3000:]
    assert (ROOT / "docs" / "openapi.yaml").read_text() == written.read_text(), "run make openapi"


def variables_read() -> set[str]:
    """Every environment variable the settings read by name (``env_int("NAME", ...)`` and the like)."""
    return set(re.findall(r"\benv_[a-z]+\(\s*\"([A-Z][A-Z0-9_]+)\"", SETTINGS.read_text()))


def test_every_environment_variable_is_documented():
    configuration, study = CONFIGURATION.read_text(), STUDY.read_text()
    missing = sorted(
        name
        for name in variables_read()
        if name not in configuration
        and name not in study
        and not (name.startswith(STUDY_PREFIX) and f"`{name.removeprefix(STUDY_PREFIX)}`" in study)
    )
    assert len(variables_read()) > 80  # the pattern still finds them
    assert not missing, f"not in the docs' configuration pages: {missing}"
    assert "RATINGGAME_FLAG_" in configuration  # the flags' thresholds, named by their rules
