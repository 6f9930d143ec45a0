"""Faults, with nothing lost (issue 7), on real services: a gunicorn server in a child process
(production settings) on the test database, played by the crowd simulator over HTTP.

- PostgreSQL restarts while the crowd plays: every rating the server acknowledged is in the
  database afterwards, exactly as acknowledged, and the site recovers by itself (persistent
  connections are health-checked, CONN_HEALTH_CHECKS; the simulator retries 5xx and connection
  errors with backoff and counts only answered ratings).
- Redis (the Celery broker) is down: rating goes on (it never needs the broker), and game pairs
  uploaded meanwhile are stored and stay ``pending`` for priming; once Redis is back, the
  periodic sweep (scoring.tasks.sweep_pending_priming) queues them again and a real ``gpu``
  worker (a tiny random-weights CLIP, tests/scoring/tiny_clip.py) gives each its two primes.

The PostgreSQL restart stops every connection to the cluster, this test process's too (closed
and reopened afterwards). Restarting needs ``pg_ctlcluster`` (root on the CI machine), stopping
Redis the ``redis-cli``/``redis-server`` of the machine; without them the tests skip (fail in CI).
"""

import os
import shutil
import subprocess
import threading
import time
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from django.db import close_old_connections, connection
from django.utils import timezone
from rest_framework.authtoken.models import Token

from ratinggame.models import CaptionPair, Pool, PrimingStatus
from tests.acks import acknowledged, stored_ratings
from tests.celery_broker import celery_sending_to
from tests.conftest import service_missing
from tests.live_process import QUIET_WORKER, celery_process, current_database_url, gunicorn_server, server_env
from tests.ratinggame.api_helpers import researcher
from tools.simulator.crowd import Ack, CrowdConfig, crowd_simulate

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.machine]

POSTGRES_CONFIG = Path("/etc/postgresql")
REDIS_PORT = 6379
REDIS_START = [
    "redis-server",
    "--daemonize",
    "yes",
    "--bind",
    "127.0.0.1",
    "-::1",
    "--port",
    str(REDIS_PORT),
    "--save",
    "",
    "--appendonly",
    "no",
    "--dir",
    "/var/lib/redis",
    "--logfile",
    "/var/log/redis/ci.log",
]


# --- PostgreSQL restart ---------------------------------------------------------------------------


@pytest.fixture
def postgres_restart(require_postgres) -> list[str]:
    """The command that restarts this machine's PostgreSQL cluster."""
    if not shutil.which("pg_ctlcluster") or not POSTGRES_CONFIG.is_dir() or not os.listdir(POSTGRES_CONFIG):
        service_missing("pg_ctlcluster is not available: cannot restart PostgreSQL")
    version = sorted(os.listdir(POSTGRES_CONFIG))[-1]
    return ["pg_ctlcluster", "--skip-systemctl-redirect", version, "main", "restart"]


@pytest.mark.django_db(transaction=True)
def test_a_postgres_restart_loses_no_acknowledged_rating(postgres_restart, tmp_path):
    token = Token.objects.create(user=researcher()).key
    env = server_env(media_root=tmp_path / "media", min_seconds=0.05)
    acks_seen: list[tuple[float, Ack]] = []
    enough = threading.Event()

    def on_ack(ack: Ack) -> None:
        acks_seen.append((time.monotonic(), ack))
        if len(acks_seen) >= 60:
            enough.set()

    outcome: dict = {}
    with gunicorn_server(env, tmp_path / "server.log") as url:
        config = CrowdConfig(
            server=url, raters=8, pairs=40, seed=3, admin_token=token, setup=True, retry_seconds=90, timeout=30
        )

        def play() -> None:
            try:
                outcome["result"] = crowd_simulate(config, on_ack=on_ack)
            except BaseException as error:  # noqa: BLE001 - handed to the test thread
                outcome["error"] = error
            finally:
                enough.set()

        player = threading.Thread(target=play, daemon=True)
        player.start()
        assert enough.wait(240), "the crowd did not get going"
        assert "error" not in outcome, outcome.get("error")
        restart_began = time.monotonic()
        subprocess.run(postgres_restart, check=True, timeout=120, capture_output=True)
        restart_ended = time.monotonic()
        player.join(timeout=400)
        assert not player.is_alive(), "the crowd did not finish"
        healthz = httpx.get(f"{url}/healthz", timeout=10)
    if "error" in outcome:
        raise outcome["error"]
    result = outcome["result"]

    # The restart broke this process's connection as well: reconnect before reading.
    connection.close()
    close_old_connections()

    assert result.report["gave_up"] == {}, result.report
    before = [ack for at, ack in acks_seen if at < restart_began]
    after = [ack for at, ack in acks_seen if at > restart_ended]
    assert before and after, "the restart did not happen while the crowd was rating"
    # Recovered without a manual step: the same raters went on rating, and the site is healthy.
    assert {ack.rater for ack in after} & {ack.rater for ack in before}
    assert healthz.status_code == 200 and healthz.json()["database"] == "ok"
    # Nothing lost: every acknowledged rating is stored as acknowledged; and nothing stored that
    # was not acknowledged (a submission whose answer was lost was retried and answered).
    assert acknowledged(result.acks) == stored_ratings()
    assert result.report["ratings_acknowledged"] == len(result.acks) > len(before)


# --- Redis down -------------------------------------------------------------------------------------


@pytest.fixture
def redis_stoppable(redis_url) -> str:
    """Redis at 127.0.0.1:6379, which this test may stop and start with the machine's own commands."""
    if not redis_url.startswith(("redis://127.0.0.1:6379", "redis://localhost:6379")):
        service_missing(f"the Redis outage test stops the local Redis on port 6379, not {redis_url}")
    if not shutil.which("redis-cli") or not shutil.which("redis-server"):
        service_missing("redis-cli/redis-server are not installed: cannot stop and start Redis")
    return redis_url


def redis_up() -> bool:
    answer = subprocess.run(["redis-cli", "-p", str(REDIS_PORT), "ping"], capture_output=True, text=True, timeout=10)
    return answer.stdout.strip() == "PONG"


def redis_wait(up: bool, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while redis_up() != up:
        assert time.monotonic() < deadline, f"Redis did not come {'up' if up else 'down'}"
        time.sleep(0.2)


@pytest.fixture
def tiny_model(tmp_path_factory) -> Path:
    pytest.importorskip("open_clip", reason="open_clip is not installed (model priming runs on workers)")
    from tests.scoring.priming.tiny_clip import save_tiny_clip_dir

    return save_tiny_clip_dir(tmp_path_factory.mktemp("faults") / "tiny-clip")


@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_with_redis_down_rating_goes_on_and_new_pairs_wait_for_priming(
    redis_stoppable, require_postgres, tiny_model, tmp_path
):
    token = Token.objects.create(user=researcher()).key
    media = tmp_path / "media"
    env = server_env(media_root=media, min_seconds=0.05, extra={"CELERY_BROKER_URL": redis_stoppable})
    with gunicorn_server(env, tmp_path / "server.log") as url:
        assert httpx.get(f"{url}/healthz", timeout=10).json() == {"database": "ok", "broker": "ok"}
        subprocess.run(["redis-cli", "-p", str(REDIS_PORT), "shutdown", "nosave"], capture_output=True, timeout=30)
        try:
            redis_wait(up=False)
            health = httpx.get(f"{url}/healthz", timeout=10)
            # The crowd uploads its game pairs (queued for priming after commit) and plays.
            # Three game ratings each: 12 of the 30 or more slots of 10 pairs, so none runs dry.
            config = CrowdConfig(
                server=url, raters=4, pairs=10, seed=5, admin_token=token, setup=True, timeout=60, share=3
            )
            result = crowd_simulate(config)
        finally:
            subprocess.run(REDIS_START, check=True, capture_output=True, timeout=30)
            redis_wait(up=True)
        health_after = httpx.get(f"{url}/healthz", timeout=10)

    close_old_connections()
    # The health check tells the operator the broker is gone, and back.
    assert (health.status_code, health.json()) == (503, {"database": "ok", "broker": "error"})
    assert (health_after.status_code, health_after.json()) == (200, {"database": "ok", "broker": "ok"})
    # Rating went on: no error at all, every rater rated its share, every rating stored.
    assert result.report["errors"] == {} and result.report["gave_up"] == {}, result.report
    assert set(result.report["raters_ended"]) <= {"share", "probation"}
    assert result.report["ratings_by_stage"].get("game", 0) > 0
    assert acknowledged(result.acks) == stored_ratings()
    # The pairs uploaded while Redis was down are stored, waiting for priming.
    game_ids = sorted(CaptionPair.objects.filter(pk__in=result.truths, pool=Pool.GAME).values_list("pk", flat=True))
    assert len(game_ids) == 10
    statuses = set(CaptionPair.objects.filter(pk__in=game_ids).values_list("priming_status", flat=True))
    assert statuses == {PrimingStatus.PENDING}

    # Redis is back: the periodic sweep (every 5 minutes under Celery beat; run here, its
    # messages go to Redis) queues them, and a gpu worker primes each exactly twice. The sweep
    # leaves pairs younger than a minute to their own on_commit dispatch: these were made
    # seconds ago, so they are dated back as if the next beat tick had come.
    CaptionPair.objects.filter(pk__in=game_ids).update(created_at=timezone.now() - timedelta(minutes=2))
    worker_env = {
        **env,
        "DJANGO_LOG_LEVEL": "INFO",
        "RATINGGAME_PRIMING_MODEL": str(tiny_model),
        "RATINGGAME_PRIMING_PRETRAINED": "",
        "RATINGGAME_PRIMING_DEVICE": "cpu",
        "DATABASE_URL": current_database_url(),
    }
    log_path = tmp_path / "worker.log"
    gpu_worker = ["worker", "-Q", "gpu", "-c", "1", *QUIET_WORKER]
    with celery_sending_to(redis_stoppable), celery_process(gpu_worker, worker_env, log_path):
        from scoring.tasks import sweep_pending_priming

        assert sweep_pending_priming.apply().get() == len(game_ids)
        deadline = time.monotonic() + 180
        while set(CaptionPair.objects.filter(pk__in=game_ids).values_list("priming_status", flat=True)) != {
            PrimingStatus.DONE
        }:
            assert time.monotonic() < deadline, log_path.read_text(errors="replace")[-3000:]
            time.sleep(0.5)
    for pair in CaptionPair.objects.filter(pk__in=game_ids):
        assert len(pair.primes) == 2 and all(1 <= value <= 5 for value in pair.primes), pair.primes
