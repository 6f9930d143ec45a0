"""The PCM competency analysis on the site's ratings, its job lifecycle and its Celery tasks."""

import json
from datetime import timedelta

import numpy as np
import pytest
from django.urls import reverse
from django.utils import timezone
from scipy.stats import spearmanr

from annotators.competency.analysis import build_responses
from annotators.competency.jobs import competency_refresh_due, competency_refresh_request, latest_competency_summary
from annotators.models import CompetencyAnalysis, RaterState
from annotators.tasks import maybe_refresh_competency, refresh_competency
from tests.celery_broker import celery_sending_to
from tests.factories import (
    CaptionPairFactory,
    ImageFactory,
    ProbationPairFactory,
    RaterProfileFactory,
    TutorialPairFactory,
    UserFactory,
    rating_record,
)

pytestmark = pytest.mark.django_db

N_RATERS, N_GAME, N_TUTORIAL = 12, 40, 10


@pytest.fixture
def image():
    return ImageFactory()


def simulated_rating(rng: np.random.Generator, truth: int, p_exact: float) -> int:
    """Exact with probability p_exact; else off by one (70%) or by two (30%), inside 1..5."""
    draw = rng.random()
    if draw < p_exact:
        return truth
    step = 1 if draw < p_exact + (1 - p_exact) * 0.7 else 2
    sign = rng.choice([-1, 1])
    value = truth + sign * step
    return value if 1 <= value <= 5 else truth - sign * step


def simulate(image, seed: int) -> tuple[list, np.ndarray]:
    """12 raters whose chance of an exact rating grows from 0.25 to 0.9; truths 2..4.

    Every rater rates 10 tutorial pairs (tutorial_score = sum of 2 - |expert - rating|, as
    in SPEC section 2) and 40 game pairs. Returns the profiles and their p_exact.
    """
    rng = np.random.default_rng(seed)
    p_exact = np.linspace(0.25, 0.9, N_RATERS)
    tutorial = [TutorialPairFactory(image=image, expert_rating=int(rng.integers(2, 5))) for _ in range(N_TUTORIAL)]
    game = [CaptionPairFactory(image=image) for _ in range(N_GAME)]
    truths = rng.integers(2, 5, size=N_GAME)
    profiles = []
    for p in p_exact:
        profile = RaterProfileFactory(state=RaterState.GAME)
        score = 0
        for pair in tutorial:
            value = simulated_rating(rng, pair.expert_rating, p)
            score += 2 - abs(pair.expert_rating - value)
            rating_record(rater=profile.user, pair=pair, value=value)
        for pair, truth in zip(game, truths, strict=True):
            rating_record(rater=profile.user, pair=pair, value=simulated_rating(rng, int(truth), p))
        profile.tutorial_score = score
        profile.save(update_fields=["tutorial_score"])
        profiles.append(profile)
    return profiles, p_exact


def test_response_matrix_hand_worked(image):
    """Game pair G rated 2, 3, 5 by A, B, C: leave-one-out consensus 4, 4 (3.5 up), 3 (2.5 up)
    -> rubric 0 (|2-4| = 2), 1, 0 (|5-3| = 2). Game pair H has only 2 ratings: not an item.
    Tutorial pair T (expert 3), A rates 3 -> 2. Probation pair P (expert 3), A rates 1 in round
    one and 3 in round two: the first counts -> 0.
    """
    a, b, c = (RaterProfileFactory(state=RaterState.GAME, tutorial_score=s) for s in (10, 15, None))
    g, h = CaptionPairFactory(image=image), CaptionPairFactory(image=image)
    t = TutorialPairFactory(image=image, expert_rating=3)
    p = ProbationPairFactory(image=image, expert_rating=3)
    rating_record(rater=a.user, pair=t, value=3)
    rating_record(rater=a.user, pair=p, value=1)
    rating_record(rater=a.user, pair=p, value=3)
    for profile, value in ((a, 2), (b, 3), (c, 5)):
        rating_record(rater=profile.user, pair=g, value=value)
    rating_record(rater=a.user, pair=h, value=3)
    rating_record(rater=b.user, pair=h, value=3)

    matrix = build_responses()
    assert matrix.profile_ids == [a.pk, b.pk, c.pk]
    assert sorted(matrix.pair_ids) == sorted([g.pk, t.pk, p.pk])
    column = {pid: i for i, pid in enumerate(matrix.pair_ids)}
    expected = np.full((3, 3), np.nan)
    expected[0, column[g.pk]], expected[1, column[g.pk]], expected[2, column[g.pk]] = 0, 1, 0
    expected[0, column[t.pk]] = 2
    expected[0, column[p.pk]] = 0
    np.testing.assert_array_equal(matrix.responses, expected)
    np.testing.assert_array_equal(matrix.tutorial_percent, [50.0, 75.0, np.nan])


def test_analysis_end_to_end_ranks_simulated_raters(client, image, django_capture_on_commit_callbacks):
    profiles, p_exact = simulate(image, seed=2024)
    with django_capture_on_commit_callbacks(execute=True):
        analysis = competency_refresh_request()
    analysis.refresh_from_db()
    assert analysis.status == CompetencyAnalysis.Status.DONE, analysis.error
    assert (analysis.n_raters, analysis.n_items, analysis.n_responses) == (
        N_RATERS,
        N_GAME + N_TUTORIAL,
        N_RATERS * (N_GAME + N_TUTORIAL),
    )
    assert analysis.details["game_items"] == N_GAME
    assert analysis.details["tutorial_items"] == N_TUTORIAL
    assert analysis.game_ratings_count == N_RATERS * N_GAME

    ability = np.array([analysis.abilities[str(p.pk)][0] for p in profiles])
    se = np.array([analysis.abilities[str(p.pk)][1] for p in profiles])
    assert np.all(se > 0)
    # Rank agreement with the generating p_exact. This design (12 raters, 40 game + 10 tutorial
    # pairs) gave Spearman rho above 0.86 in 99 of 100 seeded simulations fitted with fit_pcm.
    rho = spearmanr(p_exact, ability).statistic
    assert rho > 0.8, (rho, ability)
    # The best third of the simulated raters is above the worst third on average.
    assert ability[-4:].mean() > ability[:4].mean()
    # Dawid-Skene's expected accuracy (on the game ratings alone) ranks them too.
    quality = np.array([analysis.rater_quality[str(p.pk)] for p in profiles])
    assert spearmanr(p_exact, quality).statistic > 0.7, quality

    # Tutorial scores were simulated with the same p_exact: the slope of the game-only
    # competency on them is positive; 12 raters are fewer than the documented minimum.
    assert analysis.regression["n"] == N_RATERS and analysis.regression["too_few"] is True
    assert analysis.regression["coef_per_10_percent"] > 0
    assert analysis.regression["converged"] is True and analysis.details["converged"] is True
    svg = analysis.wright_map_svg
    assert svg.startswith("<svg") and "<title" in svg and "<desc" in svg

    summary = latest_competency_summary()
    assert json.loads(json.dumps(summary)) == summary
    assert summary["id"] == analysis.pk
    assert summary["paper_regression"]["coef_per_10_percent"] == 0.17

    # The dashboard shows the Wright map, the regression beside the paper's, and competencies.
    client.force_login(UserFactory(is_staff=True))
    page = client.get(reverse("staff:dashboard")).content.decode()
    assert 'aria-labelledby="wright-map-title wright-map-desc"' in page
    assert f"Too few raters to interpret (20 needed): {analysis.regression['coef_per_10_percent']:.3f}" in page
    assert "did not converge" not in page
    assert "DS accuracy" in page and f"{quality[-1]:.0%}" in page
    assert "<td>+0.17</td>" in page
    for value in ability:
        assert f'<td class="more">{value:.2f}</td>' in page  # the competency column


def test_no_summary_before_an_analysis():
    assert latest_competency_summary() is None


def test_analysis_without_ratings_fails_with_a_reason(django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        analysis = competency_refresh_request()
    analysis.refresh_from_db()
    assert analysis.status == CompetencyAnalysis.Status.FAILED
    assert "nothing to analyse" in analysis.error
    assert latest_competency_summary() is None


def test_refresh_task_in_eager_mode_runs_once(image):
    simulate(image, seed=7)
    analysis = CompetencyAnalysis.objects.create()
    result = refresh_competency.delay(analysis.pk)
    assert result.get() == CompetencyAnalysis.Status.DONE
    # A redelivered message finds the analysis claimed and does nothing.
    assert refresh_competency.delay(analysis.pk).get() == "skipped"
    analysis.refresh_from_db()
    assert analysis.status == CompetencyAnalysis.Status.DONE


def test_refresh_task_declares_its_queue_acks_late_and_time_limits():
    from ratinggame.celery import app

    assert app.amqp.router.route({}, refresh_competency.name)["queue"].name == "default"
    assert refresh_competency.acks_late is True
    assert refresh_competency.soft_time_limit < refresh_competency.time_limit


def test_periodic_check_starts_an_analysis_after_every_n_game_ratings(
    settings, image, django_capture_on_commit_callbacks
):
    settings.RATINGGAME_COMPETENCY_EVERY = 5
    raters = [RaterProfileFactory(state=RaterState.GAME) for _ in range(3)]
    pairs = [CaptionPairFactory(image=image) for _ in range(2)]
    values = iter([1, 2, 3, 4, 5, 3])

    def rate(n):
        done = 0
        for pair in pairs:
            for rater in raters:
                if pair.ratings.filter(rater=rater.user).exists():
                    continue
                if done == n:
                    return
                rating_record(rater=rater.user, pair=pair, value=next(values))
                done += 1

    rate(4)
    assert not competency_refresh_due()
    assert maybe_refresh_competency.delay().get() is None
    assert not CompetencyAnalysis.objects.exists()

    rate(1)  # the fifth game rating
    assert competency_refresh_due()
    with django_capture_on_commit_callbacks(execute=True):
        analysis_id = maybe_refresh_competency.delay().get()
    analysis = CompetencyAnalysis.objects.get(pk=analysis_id)
    assert analysis.game_ratings_count == 5
    assert analysis.status == CompetencyAnalysis.Status.DONE, analysis.error

    # Nothing new since: no second analysis; one more rating is not enough either.
    assert maybe_refresh_competency.delay().get() is None
    rate(1)
    assert maybe_refresh_competency.delay().get() is None
    assert CompetencyAnalysis.objects.count() == 1


def test_a_request_while_one_is_pending_returns_that_one():
    first = CompetencyAnalysis.objects.create(status=CompetencyAnalysis.Status.QUEUED)
    assert competency_refresh_request().pk == first.pk
    assert CompetencyAnalysis.objects.count() == 1


def test_the_periodic_check_is_scheduled(settings):
    tasks = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert "annotators.tasks.maybe_refresh_competency" in tasks


# A broker that refuses connections at once (nothing listens on port 1).
REFUSING_BROKER = "redis://127.0.0.1:1/0"


@pytest.mark.django_db(transaction=True)  # on_commit runs as in production, inside the request
def test_refresh_with_the_broker_down_says_so_and_blocks_nothing(client):
    staff = UserFactory(is_staff=True)
    client.force_login(staff)
    with celery_sending_to(REFUSING_BROKER):
        response = client.post(reverse("staff:competency_refresh"))
    assert response.status_code == 302
    analysis = CompetencyAnalysis.objects.get()
    assert analysis.status == CompetencyAnalysis.Status.FAILED
    assert analysis.started_at is None and analysis.finished_at is not None
    assert "Could not queue the analysis" in analysis.error
    page = client.get(response["Location"]).content.decode()
    assert "could not be started: the task broker is unreachable" in page
    assert "An analysis is running" not in page

    # Nothing is stuck: the periodic check asks again (no new ratings needed), and so does a
    # click, which now reaches the (inline) worker and runs.
    assert competency_refresh_due()
    again = competency_refresh_request(requested_by=staff)
    assert again.pk != analysis.pk
    again.refresh_from_db()
    assert again.started_at is not None
    # It ran: no ratings yet.
    assert again.status == CompetencyAnalysis.Status.FAILED and "nothing to analyse" in again.error
    assert not competency_refresh_due()  # a run that ran counts: a data problem waits for new ratings


def test_the_periodic_check_retries_an_analysis_the_broker_never_got(
    settings, image, django_capture_on_commit_callbacks
):
    settings.RATINGGAME_COMPETENCY_EVERY = 1
    rating_record(rater=RaterProfileFactory(state=RaterState.GAME).user, pair=CaptionPairFactory(image=image), value=3)
    with celery_sending_to(REFUSING_BROKER), django_capture_on_commit_callbacks(execute=True):
        lost_id = maybe_refresh_competency()  # the beat's task, run by a worker while Redis is down
    assert lost_id is not None
    lost = CompetencyAnalysis.objects.get(pk=lost_id)
    assert (lost.status, lost.started_at) == (CompetencyAnalysis.Status.FAILED, None)

    # No new rating since, yet the next check asks again, and this time the analysis runs.
    with django_capture_on_commit_callbacks(execute=True):
        retried_id = maybe_refresh_competency.delay().get()
    assert retried_id not in (None, lost_id)
    assert CompetencyAnalysis.objects.get(pk=retried_id).started_at is not None
    assert maybe_refresh_competency.delay().get() is None  # and not again


def test_a_running_analysis_is_stale_an_hour_after_it_started_not_after_it_was_requested():
    long_ago = timezone.now() - timedelta(hours=3)
    running = CompetencyAnalysis.objects.create(status=CompetencyAnalysis.Status.RUNNING)
    CompetencyAnalysis.objects.filter(pk=running.pk).update(created_at=long_ago, started_at=timezone.now())
    # Queued for hours, started a moment ago: still running, a new request waits for it.
    assert competency_refresh_request().pk == running.pk
    CompetencyAnalysis.objects.filter(pk=running.pk).update(started_at=long_ago)
    assert competency_refresh_request().pk != running.pk
