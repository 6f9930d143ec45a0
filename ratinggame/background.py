"""Background work, one way for every app: tasks sent after commit, and tracked jobs.

**Sending.** Every task of the project has ``BackgroundTask`` as its base and lives in its app's
``tasks`` module, which calls the app's services; services never import tasks. Code that asks
for background work calls ``dispatch("app.tasks.name", *args, on_not_queued=...)``: the message
is sent once
the current transaction commits (never for work that was rolled back), and a broker that
does not answer is handled the same way everywhere: one logged warning, and the caller's
``on_not_queued(reason)`` records on its own rows that the work is waiting (an export or an
analysis is marked failed with the reason; pairs to prime stay pending with it as a note).
Nothing raises into the request that asked.

Without a broker (``CELERY_BROKER_URL`` unset, the laptop default) tasks run inline, except
the ones marked ``inline_when_eager = False``: model work on the GPU queue, which would load
torch into the web process. Those are not sent at all; ``on_not_queued`` says how to run
them (a management command or a worker). Tasks marked ``off_request_when_eager = True`` (work
that can outlast a request: a large import, display copies) are run by a thread instead, the
embedded mode's worker (``EagerWorker``), so that the request that asked answers at once
(setting ``RATINGGAME["EAGER_IN_THREADS"]``; off, they run inline like the others).

**Tracked jobs.** ``TrackedJobs`` is the life of a job row that a page follows (queued ->
running -> done or failed): the claim by a conditional UPDATE, so that a redelivered message
never runs a job twice and a job whose worker died can run again once it is stale; the end;
the failure; the "could not queue" failure; and progress written at most every 1%.
"""

import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

from celery import Task
from django import db
from django.db import models, transaction
from django.db.models import Q
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerError

if TYPE_CHECKING:
    from ratinggame.models import TrackedJob

log = logging.getLogger(__name__)

# What sending a message raises when the broker does not answer (kombu wraps most; a refused
# socket can surface as OSError).
BROKER_ERRORS = (BrokerError, OSError)
NO_BROKER = "no task broker is configured (CELERY_BROKER_URL), and model work never runs in the web process"


class NotQueued(Exception):
    """Why a task was not sent: the broker did not answer, or the task does not run inline."""


class BackgroundTask(Task):
    """The base of every task of the project (``@shared_task(base=BackgroundTask, ...)``)."""

    # False for model work on the GPU queue: without a broker it is not run inside the web
    # process (it would import torch there); a management command runs it instead.
    inline_when_eager = True
    # True for work that can outlast a request: without a broker it runs in a thread.
    off_request_when_eager = False

    def dispatch(self, *args, on_not_queued: Callable[[NotQueued], None] | None = None, **kwargs) -> None:
        """Send ``self(*args, **kwargs)`` after the current transaction commits (at once outside one)."""
        transaction.on_commit(lambda: self.send_now(args, kwargs, on_not_queued))

    def not_run_here(self) -> NotQueued | None:
        """Why this task will not run when dispatched here and now (no broker, and not inline); else None."""
        if self.app.conf.task_always_eager and not self.inline_when_eager:
            return NotQueued(NO_BROKER)
        return None

    def runs_in_thread(self) -> bool:
        from django.conf import settings

        return (
            self.app.conf.task_always_eager
            and self.off_request_when_eager
            and settings.RATINGGAME.get("EAGER_IN_THREADS", False)
        )

    def send_now(self, args: tuple, kwargs: dict, on_not_queued: Callable[[NotQueued], None] | None = None) -> bool:
        """Send the message now; True when it was queued (or run inline)."""
        reason = self.not_run_here()
        if reason is None and self.runs_in_thread():
            EAGER_WORKER.submit(self, args, kwargs)
            return True
        if reason is None:
            try:
                self.apply_async(args, kwargs)
                return True
            except BROKER_ERRORS as error:
                reason = NotQueued(f"the task broker did not answer ({type(error).__name__}: {error})")
        log.warning("%s not queued: %s", self.name, reason)
        if on_not_queued is not None:
            on_not_queued(reason)
        return False


class EagerWorker:
    """The embedded mode's worker: one thread that runs the tasks given to it in order, each with
    its own database connection, and ends once it has nothing left to do.

    Not a daemon: a process that ends normally (a management command, a server stopped) first
    finishes what it was given. A process killed outright loses the queue with it; the tasks'
    own guarantees (a tracked job's heartbeat and sweep, ``make_derivatives``) cover that as
    they cover a dead worker.
    """

    IDLE_SECONDS = 1.0

    def __init__(self) -> None:
        self._queue: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def submit(self, task: "BackgroundTask", args: tuple, kwargs: dict) -> None:
        with self._lock:
            self._queue.put((task, args, kwargs))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="eager-worker")
                self._thread.start()

    def join(self) -> None:
        """Wait until every task given so far has run (tests; a process that ends cleanly)."""
        self._queue.join()

    def _run(self) -> None:
        try:
            while True:
                try:
                    task, args, kwargs = self._queue.get(timeout=self.IDLE_SECONDS)
                except queue.Empty:
                    with self._lock:
                        if self._queue.empty():
                            self._thread = None
                            return
                    continue
                try:
                    task.apply(args, kwargs)
                except Exception:
                    log.exception("%s failed in the embedded worker", task.name)
                finally:
                    self._queue.task_done()
        finally:
            db.connections.close_all()


EAGER_WORKER = EagerWorker()


def task_named(task_name: str) -> BackgroundTask:
    """The registered task ``task_name``; the apps' ``tasks`` modules are imported on first use
    (the web process, unlike a worker, does not import them at start)."""
    from ratinggame.celery import app

    if task_name not in app.tasks:
        app.loader.import_default_modules()
    return app.tasks[task_name]


def dispatch(task_name: str, *args, on_not_queued: Callable[[NotQueued], None] | None = None, **kwargs) -> None:
    """Send the task named ``task_name`` after the current transaction commits (``BackgroundTask.dispatch``)."""
    task_named(task_name).dispatch(*args, on_not_queued=on_not_queued, **kwargs)


@dataclass(frozen=True)
class TrackedJobs:
    """The life of the rows of one job model, a ``ratinggame.models.TrackedJob`` (its ``status``,
    ``started_at``, ``finished_at``, ``error``, ``progress`` and ``progress_message``).

    A running job counts as lost (its worker died) ``stale_after`` after it started.
    """

    model: "type[TrackedJob]"
    stale_after: timedelta

    @property
    def queued(self) -> str:
        return self.model.Status.QUEUED

    @property
    def running(self) -> str:
        return self.model.Status.RUNNING

    @property
    def done(self) -> str:
        return self.model.Status.DONE

    @property
    def failed(self) -> str:
        return self.model.Status.FAILED

    def in_progress(self) -> Q:
        """Jobs waiting (since their creation) or running (since their start) for less than ``stale_after``."""
        cutoff = timezone.now() - self.stale_after
        return Q(status=self.queued, created_at__gte=cutoff) | Q(status=self.running, started_at__gte=cutoff)

    def claim(self, pk: int, **fields) -> bool:
        """Take a queued job, or one whose worker was lost: True for the one worker that gets it."""
        now = timezone.now()
        claimable = Q(status=self.queued) | Q(status=self.running, started_at__lt=now - self.stale_after)
        updated = self.model.objects.filter(claimable, pk=pk).update(status=self.running, started_at=now, **fields)
        return bool(updated)

    def finish(self, pk: int, **fields) -> str:
        self.model.objects.filter(pk=pk).update(status=self.done, finished_at=timezone.now(), error="", **fields)
        return self.done

    def finish_claimed(self, pk: int, started_at, **fields) -> bool:
        """``finish`` by the run whose claim (``started_at``) still holds; False when the job was
        claimed again since (its run taken for dead) or ended."""
        running = self.model.objects.filter(pk=pk, status=self.running, started_at=started_at)
        return bool(running.update(status=self.done, finished_at=timezone.now(), error="", **fields))

    def fail(self, pk: int, error: str, **fields) -> str:
        """A job that ran and failed (its message names the reason)."""
        self.model.objects.filter(pk=pk, status=self.running).update(
            status=self.failed, error=error, finished_at=timezone.now(), **fields
        )
        return self.failed

    def not_queued(self, pk: int, what: str, reason: NotQueued, **fields) -> None:
        """A job whose message never reached a worker: failed at once, ``started_at`` left empty."""
        self.model.objects.filter(pk=pk, status=self.queued).update(
            status=self.failed, error=f"Could not queue {what}: {reason}", finished_at=timezone.now(), **fields
        )

    def never_queued(self, job: models.Model) -> bool:
        """A failed job that never started: its message never reached the broker."""
        return job.status == self.failed and job.started_at is None

    def progress_writer(self, pk: int) -> Callable[[float, str], None]:
        return ProgressWriter(self.model, pk)


class ProgressWriter:
    """Writes ``progress`` (0..1) and ``progress_message`` on a job row, at most every 1% or when
    the message changes (a count in parentheses does not count as a change)."""

    STEP = 0.01

    def __init__(self, model: type[models.Model], pk: int) -> None:
        self.model = model
        self.pk = pk
        self.written = (-1.0, "")

    def __call__(self, fraction: float, message: str) -> None:
        fraction = min(max(fraction, 0.0), 1.0)
        last_fraction, last_message = self.written
        if fraction - last_fraction < self.STEP and message.split(" (")[0] == last_message.split(" (")[0]:
            return
        self.model.objects.filter(pk=self.pk).update(progress=fraction, progress_message=message[:200])
        self.written = (fraction, message)
