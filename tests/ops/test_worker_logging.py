"""Celery's processes log as the web tier does: a worker and beat, started as the deployment starts
them, write their records with the settings' LOGGING (DJANGO_LOG_FORMAT's JSON lines or the plain
line with the request id field), at the level of their ``--loglevel``. Celery's own set-up would
replace the root logger's handlers with its plain ``[time: LEVEL/MainProcess]`` format.

A memory broker: the processes need no Redis to start and log. Each is stopped once it has logged
that it started.
"""

import json
import os
import re
import time
from pathlib import Path

import pytest

from tests.live_process import QUIET_WORKER, celery_process

START_SECONDS = 60
CELERYS_OWN_FORMAT = re.compile(r"^\[\d{4}-\d\d-\d\d [\d:,]+: [A-Z]+/\w+\]", re.MULTILINE)
PLAIN = re.compile(
    r"^\d{4}-\d\d-\d\d [\d:,]+ (?P<level>[A-Z]+) (?P<logger>[\w.]+) \[(?P<request_id>[^\]]+)\] (?P<message>.*)$"
)

PROCESSES = {
    # Each process's arguments (its unit's, with the worker in one process and quiet), the logger of
    # its first INFO record, and that record's text.
    "worker": (["worker", "-Q", "default", "--pool=solo", *QUIET_WORKER], "celery.apps.worker", " ready."),
    "beat": (["beat", "--pidfile=", "-l", "info"], "celery.beat", "beat: Starting..."),
}


def environment(tmp_path: Path, log_format: str) -> dict[str, str]:
    """The embedded settings but for a broker (so tasks are not inline) and the log's format; the
    level the settings would take (DJANGO_LOG_LEVEL) is WARNING, so an INFO line shows that the
    process's ``--loglevel`` holds."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CELERY_", "DATABASE_", "DJANGO_", "RATINGGAME_"))}
    return env | {
        "CELERY_BROKER_URL": "memory://",
        "DJANGO_LOG_FORMAT": log_format,
        "DJANGO_LOG_LEVEL": "WARNING",
        "RATINGGAME_VAR_DIR": str(tmp_path / "var"),
    }


def first_lines(process_name: str, log_format: str, tmp_path: Path) -> str:
    """The process's output up to its first INFO record."""
    arguments, _, marker = PROCESSES[process_name]
    if process_name == "beat":
        arguments = [*arguments, "--schedule", str(tmp_path / "beat-schedule")]
    log = tmp_path / f"{process_name}.log"
    with celery_process(arguments, environment(tmp_path, log_format), log) as process:
        deadline = time.monotonic() + START_SECONDS
        while marker not in log.read_text(errors="replace"):
            assert process.poll() is None, log.read_text(errors="replace")[-3000:]
            assert time.monotonic() < deadline, log.read_text(errors="replace")[-3000:]
            time.sleep(0.2)
    return log.read_text(errors="replace")


def started_record(text: str, log_format: str, marker: str) -> tuple[str, str, str] | None:
    """(level, logger, request id) of the first record whose message holds ``marker``."""
    for line in text.splitlines():
        if log_format == "json" and line.startswith("{"):
            record = json.loads(line)
            if marker in record["message"]:
                return record["level"], record["logger"], record["request_id"]
        elif log_format == "plain" and (found := PLAIN.match(line)) and marker in found["message"]:
            return found["level"], found["logger"], found["request_id"]
    return None


# Each format once, each process once (a process's start is what costs: a few seconds).
@pytest.mark.parametrize(("process_name", "log_format"), [("worker", "json"), ("beat", "plain")])
def test_celery_writes_the_sites_lines_in_the_format_of_django_log_format(process_name, log_format, tmp_path):
    text = first_lines(process_name, log_format, tmp_path)
    assert not CELERYS_OWN_FORMAT.search(text), text[-3000:]
    _, logger, marker = PROCESSES[process_name]
    assert started_record(text, log_format, marker) == ("INFO", logger, "-"), text[-3000:]
