"""load_demo: real photographs from scikit-image, the tutorial and probation sets, idempotent."""

import io
import re

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.core.management import call_command

from annotators.models import RaterProfile, RaterState
from annotators.scale import LEVELS
from ratinggame.demo import content as demo_content
from ratinggame.demo.crowd import COMPETENCIES, GAME_RATINGS_EACH
from ratinggame.demo.loader import DEMO_PRIME_IDENTITY
from ratinggame.models import Assignment, CaptionPair, Image, Pool, PrimingStatus, Rating, game_ratings
from scoring.models import ModelRating
from tests.ratinggame.journey_helpers import Clock, assert_pairs_consistent, rate_next, rater

pytestmark = pytest.mark.django_db


def run_demo(settings, demo_mode=True) -> str:
    settings.RATINGGAME = {**settings.RATINGGAME, "DEMO_MODE": demo_mode}
    out = io.StringIO()
    call_command("load_demo", stdout=out)
    return out.getvalue()


def test_demo_has_tutorial_probation_and_game_pairs(settings):
    run_demo(settings)
    assert CaptionPair.objects.filter(pool=Pool.TUTORIAL).count() == 10
    # Three probation rounds of 20 without a repeat (SPEC 2.2), twelve pairs at each level.
    probation = CaptionPair.objects.filter(pool=Pool.PROBATION)
    assert probation.count() == 60
    assert sorted(probation.values_list("expert_rating", flat=True)) == sorted([1, 2, 3, 4, 5] * 12)
    assert CaptionPair.objects.filter(pool=Pool.GAME).count() == len(demo_content.GAME) >= 40
    # The control pairs are the VICR validation study's shape: five images, one caption per level.
    controls = CaptionPair.objects.filter(pool=Pool.CONTROL)
    assert controls.count() == 25 and controls.values("image").distinct().count() == 5
    for image_id in controls.values_list("image", flat=True).distinct():
        assert sorted(controls.filter(image_id=image_id).values_list("expert_rating", flat=True)) == [1, 2, 3, 4, 5]
    assert set(controls.values_list("priming_status", flat=True)) == {PrimingStatus.NOT_NEEDED}
    # The attention checks (SPEC 7, off unless a study turns them on): one per level, each caption
    # saying which level to choose.
    checks = CaptionPair.objects.filter(pool=Pool.ATTENTION)
    assert sorted(checks.values_list("expert_rating", flat=True)) == [1, 2, 3, 4, 5]
    assert all(f"choose {pair.expert_rating} " in pair.caption for pair in checks)
    teaching = CaptionPair.objects.exclude(pool__in=[Pool.GAME, Pool.ATTENTION])
    assert not teaching.filter(expert_rating__isnull=True).exists()
    assert not teaching.filter(explanation="").exists()
    # The tutorial teaches the whole scale: every level appears.
    assert set(CaptionPair.objects.filter(pool=Pool.TUTORIAL).values_list("expert_rating", flat=True)) == {
        1,
        2,
        3,
        4,
        5,
    }
    # Every explanation cites the rubric of its level: four or more words of it in a row.
    for pair in teaching:
        rubric = re.findall(r"[a-z/]+", LEVELS[5 - pair.expert_rating].meaning.lower())
        explanation = " ".join(re.findall(r"[a-z/]+", pair.explanation.lower()))
        runs = {" ".join(rubric[i : i + 4]) for i in range(len(rubric) - 3)}
        assert any(run in explanation for run in runs), pair.caption
    tutorial_order = list(CaptionPair.objects.filter(pool=Pool.TUTORIAL).order_by("display_order"))
    assert [p.caption for p in tutorial_order] == [item["caption"] for item in demo_content.TUTORIAL]


def test_the_demo_guide_has_an_example_per_level_on_images_the_tutorial_does_not_show(settings):
    run_demo(settings)
    guide = CaptionPair.objects.filter(pool=Pool.GUIDE)
    assert sorted(guide.values_list("expert_rating", flat=True)) == [1, 2, 3, 4, 5]
    # Its examples give no tutorial answer away, and they are only shown: never primed, served or rated.
    tutorial_images = set(CaptionPair.objects.filter(pool=Pool.TUTORIAL).values_list("image_id", flat=True))
    assert not tutorial_images & set(guide.values_list("image_id", flat=True))
    assert set(guide.values_list("priming_status", flat=True)) == {PrimingStatus.NOT_NEEDED}
    assert not ModelRating.objects.filter(pair__pool=Pool.GUIDE).exists()
    assert not Assignment.objects.filter(pair__pool=Pool.GUIDE).exists()  # the demo crowd has played


def test_demo_images_are_real_photographs_stored_once(settings):
    run_demo(settings)
    assert Image.objects.count() == len(demo_content.DEMO_IMAGES)
    astronaut = Image.objects.get(original_name="astronaut.png")
    assert (astronaut.width, astronaut.height) == (512, 512)
    assert astronaut.source == "scikit-image data: astronaut.png"


def counts() -> tuple[int, ...]:
    return (
        Image.objects.count(),
        CaptionPair.objects.count(),
        get_user_model().objects.count(),
        Rating.objects.count(),
        ModelRating.objects.count(),
    )


def test_load_demo_is_idempotent(settings):
    first = run_demo(settings)
    before = counts()
    second = run_demo(settings)
    assert counts() == before
    assert "0 new pair(s)" in second
    assert f"{CaptionPair.objects.count()} already present" in second
    assert "new pair(s)" in first


def test_demo_accounts_print_working_passwords_in_demo_mode(settings):
    out = run_demo(settings)
    for username in ("admin", "researcher", "annotator1", "annotator2"):
        line = next(line for line in out.splitlines() if line.strip().startswith(username + " "))
        password = line.split()[-1]
        assert authenticate(username=username, password=password) is not None
    admin = get_user_model().objects.get(username="admin")
    assert admin.is_staff and admin.is_superuser
    assert get_user_model().objects.get(username="annotator1").groups.filter(name="annotator").exists()


def test_no_demo_accounts_outside_demo_mode(settings):
    out = run_demo(settings, demo_mode=False)
    assert "no demo accounts created" in out
    assert not get_user_model().objects.exists()
    assert CaptionPair.objects.count() > 0


def written_level(pair: CaptionPair) -> int:
    if pair.pool == Pool.CONTROL:  # a control pair met in the game: its expert rating
        return pair.expert_rating
    return next(item["level"] for item in demo_content.GAME if item["caption"] == pair.caption)


def test_demo_game_pairs_are_primed_from_their_written_levels(settings):
    run_demo(settings, demo_mode=False)
    game = CaptionPair.objects.filter(pool=Pool.GAME)
    assert set(game.values_list("priming_status", flat=True)) == {PrimingStatus.DONE}
    for pair in game:
        level = written_level(pair)
        assert pair.primes == [max(1.0, level - 0.25), min(5.0, level + 0.25)]
        primes = list(pair.model_ratings.order_by("slot"))
        assert [(m.slot, m.value, m.model_identity) for m in primes] == [
            (1, pair.primes[0], DEMO_PRIME_IDENTITY),
            (2, pair.primes[1], DEMO_PRIME_IDENTITY),
        ]
    # Teaching pairs are never primed.
    assert not ModelRating.objects.exclude(pair__pool=Pool.GAME).exists()


def test_a_newcomer_who_rates_the_written_levels_qualifies_in_the_demo(settings):
    # The reason for the primes: without them a lone demo player scores 0 on every fresh pair
    # and fails every qualification window (25 points in the first 20 game ratings).
    run_demo(settings)
    user, clock = rater(RaterState.GAME), Clock()
    window = [rate_next(user, written_level, clock)[1] for _ in range(20)]
    assert window[-1].transition == "window_passed"
    assert window[-1].stage_total >= 25


def test_the_demo_crowd_has_played_and_cannot_log_in(settings):
    run_demo(settings)
    crowd = RaterProfile.objects.filter(user__username__startswith="crowd")
    assert crowd.count() == len(COMPETENCIES)
    for profile in crowd:
        assert not profile.user.has_usable_password()
        assert profile.tutorial_score is not None
    played = Rating.objects.filter(game_ratings(), rater__username__startswith="crowd")
    assert played.count() == len(COMPETENCIES) * GAME_RATINGS_EACH
    # Some pairs are validated (3 or more ratings) and many are left for the people trying it.
    game = CaptionPair.objects.filter(pool=Pool.GAME)
    assert game.filter(human_count__gte=3).count() >= 10
    assert game.filter(human_count=0).count() >= 20
    assert_pairs_consistent()


def test_no_demo_crowd_outside_demo_mode(settings):
    run_demo(settings, demo_mode=False)
    assert not Rating.objects.exists()
