"""The researchers' progress page and GET /api/progress/ (scoring.progress.dashboard): its figures equal
what the ratings table says on a seeded crowd, it reads a fixed number of queries at any pool size,
and its estimate of when the target is reached comes true in a simulated study."""

import random
from collections import Counter
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from rest_framework.test import APIClient

from annotators.models import RaterState
from annotators.roles import ADMIN, RESEARCHER
from ratinggame.demo.crowd import demo_crowd_play
from ratinggame.game.withdrawal import rater_withdraw
from ratinggame.models import CaptionPair, Image, Pool, PrimingStatus, Rating
from scoring.progress import estimate
from scoring.progress.dashboard import CHART_HOURS, study_progress
from tests.factories import ImageFactory, user_with_role
from tests.ratinggame.journey_helpers import Clock, game_pairs, probation_pairs, rate_next, rater
from tests.ratinggame.journey_helpers import tutorial_pairs as make_tutorial_pairs

pytestmark = pytest.mark.django_db

NOW = datetime(2030, 3, 4, 15, 40, tzinfo=UTC)


@pytest.fixture
def crowd():
    """The demo's seeded crowd of eight over a small pool, then, in the last hour, an admin trying
    the game and a newcomer rating, and one crowd rater withdrawing."""
    make_tutorial_pairs([5, 4, 3, 2, 1, 5, 4, 3, 2, 1])
    probation_pairs(30)
    pairs = game_pairs(40, primes=[3.0, 3.0])
    CaptionPair.objects.filter(pk__in=[p.pk for p in pairs[:3]]).update(priming_status=PrimingStatus.PENDING)
    CaptionPair.objects.filter(pk=pairs[3].pk).update(priming_status=PrimingStatus.RUNNING)
    CaptionPair.objects.filter(pk=pairs[4].pk).update(priming_status=PrimingStatus.FAILED)
    CaptionPair.objects.filter(pk__in=[p.pk for p in pairs[5:]]).update(priming_status=PrimingStatus.DONE)
    CaptionPair.objects.filter(pk=pairs[-1].pk).update(withdrawn_at=NOW - timedelta(days=2), assign_rank=None)
    demo_crowd_play(levels={}, now=NOW + timedelta(hours=20))  # crowd i starts 52 - 6 i hours before NOW
    clock = Clock(NOW - timedelta(minutes=50))
    admin = rater(RaterState.GAME, window_count=20, window_points=40)
    admin.is_staff = True
    admin.save()
    newcomer = rater(RaterState.GAME, window_count=20, window_points=40)
    for user, values in ((admin, (3, 4)), (newcomer, (3, 2, 3))):
        for value in values:
            rate_next(user, value, clock, wait=20)
    rater_withdraw(user=get_user_model().objects.get(username="crowd7"), now=NOW - timedelta(minutes=5))
    return {"admin": admin, "newcomer": newcomer}


def independent_figures(now: datetime) -> dict:
    """The page's figures computed here from the rows themselves: the ratings, not the pairs'
    aggregates; staff from users' flags and groups, withdrawn accounts from their names."""
    ratings = list(Rating.objects.values("pair_id", "rater_id", "stage", "excluded", "submitted_at"))
    game = list(CaptionPair.objects.filter(pool=Pool.GAME).values("id", "priming_status", "withdrawn_at"))
    counted = Counter(r["pair_id"] for r in ratings if r["stage"] == Pool.GAME and not r["excluded"])
    per_pair = [counted[pair["id"]] for pair in game]
    users = get_user_model().objects.prefetch_related("groups")
    staff = {
        user.pk
        for user in users
        if user.is_staff
        or user.is_superuser
        or {group.name for group in user.groups.all()} & {ADMIN, RESEARCHER}
        or user.username.startswith("withdrawn-")
    }

    def active(since: datetime) -> int:
        return len({r["rater_id"] for r in ratings if r["submitted_at"] >= since and r["rater_id"] not in staff})

    start = now.replace(minute=0, second=0, microsecond=0) - timedelta(hours=CHART_HOURS - 1)
    hourly_counted, hourly_other = [0] * CHART_HOURS, [0] * CHART_HOURS
    for r in ratings:
        if start <= r["submitted_at"] <= now:
            index = int((r["submitted_at"] - start) / timedelta(hours=1))
            is_counted = r["stage"] == Pool.GAME and not r["excluded"]
            (hourly_counted if is_counted else hourly_other)[index] += 1
    return {
        "game_pairs": len(game),
        "validated": sum(n >= 3 for n in per_pair),
        "pairs_by_ratings": {
            **{str(k): sum(n == k for n in per_pair) for k in range(4)},
            "4–7": sum(n > 3 for n in per_pair),
        },
        "priming_waiting": sum(p["priming_status"] in ("pending", "running") for p in game),
        "priming_failed": sum(p["priming_status"] == "failed" for p in game),
        "kept_out": sum(p["withdrawn_at"] is not None for p in game),
        "raters_last_hour": active(now - timedelta(hours=1)),
        "raters_last_day": active(now - timedelta(days=1)),
        "counted_per_hour": hourly_counted,
        "other_per_hour": hourly_other,
        "everyone_last_hour": len({r["rater_id"] for r in ratings if r["submitted_at"] >= now - timedelta(hours=1)}),
        "everyone_last_day": len({r["rater_id"] for r in ratings if r["submitted_at"] >= now - timedelta(days=1)}),
    }


def test_the_figures_equal_the_database_on_a_seeded_crowd(crowd):
    progress = study_progress(now=NOW)
    expected = independent_figures(NOW)
    for name, value in expected.items():
        if not name.startswith("everyone"):
            assert getattr(progress, name) == value, name
    # The crowd made a study worth checking: validated pairs, every bucket, exclusions, activity.
    assert 0 < progress.validated < progress.game_pairs and progress.target == progress.game_pairs
    assert sum(progress.other_per_hour) > 0 and Rating.objects.filter(excluded=True).exists()
    # The admin rated in the last hour, yet only the newcomer counts as an active rater; in the
    # last day crowd5, 6 and 8 rated too, and crowd7, who withdrew since, does not count.
    assert expected["everyone_last_hour"] == 2 and progress.raters_last_hour == 1
    assert expected["everyone_last_day"] == 6 and progress.raters_last_day == 4
    # The rate: the counted ratings of the last day (its 24 hours of the chart), an hour.
    since = NOW.replace(minute=0) - timedelta(hours=23)
    recent = Rating.objects.counted().filter(submitted_at__gte=since).count()
    assert not progress.rate_from_first_rating and progress.rate_since == since and recent > 0
    assert progress.rate_per_hour == pytest.approx(recent / ((NOW - since) / timedelta(hours=1)))


def test_the_page_and_the_api_show_the_figures(crowd, client, settings):
    settings.RATINGGAME = {**settings.RATINGGAME, "STUDY_TARGET_PAIRS": 30}
    researcher = user_with_role(RESEARCHER, password=None)
    progress = study_progress()
    client.force_login(researcher)
    page = client.get(reverse("scoring:research")).content.decode()
    assert f"<strong>{progress.validated}</strong> of <strong>30</strong> validated pairs" in page
    assert "The target is the study's own (a setting the documentation's configuration page explains)" in page
    assert "RATINGGAME_" not in page and "SPEC" not in page
    assert 'role="img" aria-labelledby="rate-chart-title rate-chart-desc"' in page
    assert reverse("api_docs") in page
    api = APIClient()
    api.force_authenticate(researcher)
    body = api.get("/api/progress/").json()
    assert body["target"] == 30 and body["target_is_pool"] is False
    assert body["validated"] == progress.validated and body["game_pairs"] == progress.game_pairs
    assert [row["pairs"] for row in body["pairs_by_ratings"]] == list(progress.pairs_by_ratings.values())
    assert len(body["hours"]) == CHART_HOURS
    assert sum(row["counted"] for row in body["hours"]) == sum(progress.counted_per_hour)
    assert body["estimate"]["result"] in (estimate.ESTIMATED, estimate.NO_RATE, estimate.TOO_FEW_PAIRS)


def test_only_researchers_see_the_progress(client):
    annotator = rater(RaterState.GAME)
    client.force_login(annotator)
    assert client.get(reverse("scoring:research")).status_code == 403
    api = APIClient()
    api.force_authenticate(annotator)
    response = api.get("/api/progress/")
    assert response.status_code == 403 and response.json()["error"]["code"] == "permission_denied"
    assert APIClient().get("/api/progress/").status_code == 401


def many_pairs(start: int, stop: int) -> None:
    image = Image.objects.first() or ImageFactory()
    CaptionPair.objects.bulk_create(
        CaptionPair(image=image, caption=f"caption {i}", pool=Pool.GAME, human_count=i % 8) for i in range(start, stop)
    )


def queries_of(client, url: str) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url).status_code == 200
    return len(queries)


def test_the_page_reads_a_fixed_number_of_queries_whatever_the_pool(client, django_assert_max_num_queries):
    researcher = user_with_role(RESEARCHER, password=None)
    client.force_login(researcher)
    api = APIClient()
    api.force_authenticate(researcher)
    many_pairs(0, 10)
    small = queries_of(client, reverse("scoring:research")), queries_of(api, "/api/progress/")
    many_pairs(10, 10_000)
    assert Image.objects.count() == 1 and CaptionPair.objects.count() == 10_000
    with django_assert_max_num_queries(small[0]):
        page = client.get(reverse("scoring:research")).content.decode()
    assert "of <strong>10000</strong> validated pairs" in page
    with django_assert_max_num_queries(small[1]):
        assert api.get("/api/progress/").json()["game_pairs"] == 10_000
    assert small[0] <= 10 and small[1] <= 8


@pytest.fixture
def seeded_orders():
    """The pairs' order keys and the raters' seeds drawn from a seeded stream (they come from
    ``random``): the same serving orders, so the same simulated study, every run. Unseeded, the
    estimate's error ranged 0-14.7% of the time left over seeds 1-8, and CI once drew 15.2%."""
    state = random.getstate()
    random.seed(20)
    yield
    random.setstate(state)


def test_the_estimate_comes_true_in_a_simulated_study(settings, seeded_orders):
    """Six raters take turns at a steady 20 ratings an hour; a rater gives the pair's true level
    about half the time and a neighbour otherwise, so pairs disagree and some get more than 3
    ratings. When half the target is validated the page estimates when the rest will be; the
    simulation then goes on and says when it was."""
    settings.RATINGGAME = {**settings.RATINGGAME, "STUDY_TARGET_PAIRS": 40}
    rng = np.random.default_rng(20)
    truth = {pair.pk: int(rng.integers(1, 6)) for pair in game_pairs(60, primes=[3.0, 3.0])}
    raters = [rater(RaterState.GAME, window_count=20, window_points=40) for _ in range(6)]

    def value(pair: CaptionPair) -> int:
        return int(np.clip(truth[pair.pk] + rng.choice([0, 0, 0, -1, 1]), 1, 5))

    clock = Clock(datetime(2030, 1, 1, 9, 0, tzinfo=UTC))
    predicted, midpoint, turn = None, None, 0
    while CaptionPair.objects.validated().count() < 40:
        rate_next(raters[turn % len(raters)], value, clock, wait=10)
        clock.tick(180 - 11)  # one rating every 3 minutes
        turn += 1
        if predicted is None and CaptionPair.objects.validated().count() >= 20:
            progress = study_progress(now=clock.now)
            assert progress.estimate.result == estimate.ESTIMATED
            assert progress.rate_per_hour == pytest.approx(20, rel=0.1)
            predicted, midpoint = progress.estimate.reached_at, clock.now
    actual = clock.now
    assert predicted is not None and actual - midpoint > timedelta(hours=2)
    assert abs(predicted - actual) <= 0.15 * (actual - midpoint), (predicted, actual, midpoint)
    assert study_progress(now=clock.now).estimate.result == estimate.REACHED
