"""The competency analysis as a tracked job: request, run (on the default Celery queue), read.

A request stores a queued ``CompetencyAnalysis`` and dispatches ``annotators.tasks.
refresh_competency`` with its primary key once the transaction commits. The task claims the
row with a conditional UPDATE (queued -> running), so a redelivered message (acks_late)
never runs it twice (``ratinggame.background.TrackedJobs``). Requests come from the staff
dashboard and from the periodic ``maybe_refresh_competency`` check, which asks for a run once
RATINGGAME_COMPETENCY_EVERY game ratings arrived since the last one.

When the broker cannot take the message (Redis down), the request still succeeds: the
analysis is marked failed at once with a "could not queue" error (it never started, so its
``started_at`` stays empty) instead of staying queued and blocking new requests. Such an
analysis does not count as a run: the next periodic check (or a click on "Refresh") asks again.
"""

import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction

from annotators.competency.analysis import (
    PAPER_COEF_PER_10_PERCENT,
    PAPER_SE_PER_10_PERCENT,
    game_ratings_count,
    run_analysis,
)
from annotators.models import CompetencyAnalysis
from ratinggame.background import TrackedJobs, dispatch

logger = logging.getLogger(__name__)

# An analysis queued (since its request) or running (since its start) longer than this is taken
# as lost (worker killed): it does not block a new request.
STALE_AFTER = timedelta(hours=1)
JOBS = TrackedJobs(CompetencyAnalysis, stale_after=STALE_AFTER)


def competency_refresh_request(*, requested_by=None) -> CompetencyAnalysis:
    """A new analysis, or the one already waiting or running (no second run side by side).

    Never raises for a broker that is down: see the module docstring.
    """
    with transaction.atomic():
        in_progress = CompetencyAnalysis.objects.select_for_update(no_key=True).filter(JOBS.in_progress()).first()
        if in_progress is not None:
            return in_progress
        analysis = CompetencyAnalysis.objects.create(created_by=requested_by, game_ratings_count=game_ratings_count())
        dispatch(
            "annotators.tasks.refresh_competency",
            analysis.pk,
            on_not_queued=lambda reason: JOBS.not_queued(
                analysis.pk, "the analysis", f"{reason}. It is asked again at the next periodic check"
            ),
        )
    return analysis


def competency_refresh_due() -> bool:
    """Whether RATINGGAME_COMPETENCY_EVERY new game ratings arrived since the last analysis,
    or the last request never reached the broker (it is asked again)."""
    last = CompetencyAnalysis.objects.order_by("-created_at", "-id").first()
    if last is not None and never_queued(last):
        return True
    # A failed run counts too: a data problem is not retried every few minutes, only after
    # N more ratings (or on demand).
    since = last.game_ratings_count if last is not None else 0
    return game_ratings_count() - since >= settings.RATINGGAME_COMPETENCY_EVERY


def never_queued(analysis: CompetencyAnalysis) -> bool:
    """A failed analysis that never started: its message never reached the broker."""
    return JOBS.never_queued(analysis)


def competency_analysis_run(*, analysis_id: int) -> str:
    """Run a queued analysis; returns its final status ("skipped" when another worker has it)."""
    if not JOBS.claim(analysis_id):
        return "skipped"
    try:
        fields = run_analysis()
    except (ValueError, ArithmeticError, MemoryError) as error:
        # A data problem (too few ratings, one category only) is a result to show, not a retry.
        logger.warning("competency analysis %s failed: %s", analysis_id, error)
        return competency_analysis_fail(analysis_id=analysis_id, error=str(error))
    return JOBS.finish(analysis_id, **fields)


def competency_analysis_fail(*, analysis_id: int, error: str) -> str:
    return JOBS.fail(analysis_id, error)


def latest_analysis() -> CompetencyAnalysis | None:
    return (
        CompetencyAnalysis.objects.filter(status=CompetencyAnalysis.Status.DONE).order_by("-finished_at", "-id").first()
    )


def latest_competency_summary() -> dict | None:
    """The latest finished analysis as plain JSON-serialisable values (for exports); None if none."""
    analysis = latest_analysis()
    if analysis is None:
        return None
    return {
        "id": analysis.pk,
        "finished_at": analysis.finished_at.isoformat() if analysis.finished_at else None,
        "game_ratings_count": analysis.game_ratings_count,
        "n_raters": analysis.n_raters,
        "n_items": analysis.n_items,
        "n_responses": analysis.n_responses,
        "abilities": analysis.abilities,
        "regression": analysis.regression,
        "paper_regression": {
            "coef_per_10_percent": PAPER_COEF_PER_10_PERCENT,
            "se_per_10_percent": PAPER_SE_PER_10_PERCENT,
        },
        "details": analysis.details,
        "duration_seconds": analysis.duration_seconds,
        "wright_map_svg": analysis.wright_map_svg,
    }
