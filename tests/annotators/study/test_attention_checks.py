"""A study's fair attention checks (SPEC 7, issue 34 item 4): instructed-response pairs ("For this
pair choose 2") served to participants on the game screen at a set rate, recorded with a stage of
their own, in no score, window, quota, consensus or drift; failing the set number makes a
participant reject-eligible (listed for the researcher, never acted on by the site)."""

import re

import pytest
from django.test import Client

from annotators import journey
from annotators.models import RaterProfile
from ratinggame import game
from ratinggame.game.prefetch import next_pair_image
from ratinggame.models import Assignment, CaptionPair, Pool, Rating
from tests.annotators.study.test_completion import participant, study_quota
from tests.factories import AttentionCheckFactory
from tests.ratinggame.journey_helpers import Clock, game_pairs, rater

pytestmark = pytest.mark.django_db

EVERY = 4


@pytest.fixture
def checks(settings):
    study_quota(settings, ratings=50, MIN_SECONDS_PER_RATING=0)
    settings.RATINGGAME_STUDY = {**settings.RATINGGAME_STUDY, "ATTENTION_EVERY": EVERY, "ATTENTION_FAILS": 2}
    for level in (1, 2, 3):
        AttentionCheckFactory(expert_rating=level)


def _stage(served) -> str:
    return str(Assignment.objects.get(pk=served.assignment_id).stage)


def _play(user, count: int, clock: Clock, *, value_for_check=None) -> list[str]:
    """Serve and rate ``count`` pairs (3, or ``value_for_check`` on an attention check); the stages."""
    stages = []
    for _ in range(count):
        served = game.pair_serve(rater=user, now=clock.now)
        stage = _stage(served)
        stages.append(stage)
        value = value_for_check(served) if stage == Pool.ATTENTION and value_for_check else 3
        game.rating_submit(rater=user, assignment_id=served.assignment_id, value=value, now=clock.tick(1))
    return stages


def test_a_participant_meets_one_check_in_each_block_and_a_signed_up_rater_none(checks):
    game_pairs(40, primes=[3.0, 3.0])
    profile = participant(Client())
    stages = _play(profile.user, 6 * EVERY, Clock())
    blocks = [stages[i : i + EVERY] for i in range(0, len(stages), EVERY)]
    assert [block.count(Pool.ATTENTION) for block in blocks] == [1] * 6, stages
    # Each check once before any repeats (three checks in six blocks: each twice).
    checks_met = Rating.objects.filter(rater=profile.user, stage=Pool.ATTENTION).values_list("pair_id", flat=True)
    every_check = CaptionPair.objects.filter(pool=Pool.ATTENTION).values_list("id", flat=True)
    assert sorted(checks_met) == sorted(2 * list(every_check))
    assert Pool.ATTENTION not in _play(rater("game", window_count=20, window_points=40), 3 * EVERY, Clock())


def test_a_check_scores_nothing_and_counts_toward_nothing_and_its_feedback_says_what_it_asked(checks):
    game_pairs(12, primes=[3.0, 3.0])
    profile = participant(Client())
    user, clock = profile.user, Clock()
    for _ in range(3 * EVERY):
        served = game.pair_serve(rater=user, now=clock.now)
        if _stage(served) == Pool.ATTENTION:
            break
        game.rating_submit(rater=user, assignment_id=served.assignment_id, value=3, now=clock.tick(1))
    else:
        raise AssertionError("no attention check served")
    assert served.stage == Pool.GAME  # served on the game screen
    before = RaterProfile.objects.get(pk=profile.pk)
    instructed = CaptionPair.objects.get(pk=served.pair_id).expert_rating
    wrong = 5 if instructed != 5 else 1
    feedback = game.rating_submit(rater=user, assignment_id=served.assignment_id, value=wrong, now=clock.tick(1))
    after = RaterProfile.objects.get(pk=profile.pk)
    assert (feedback.points, feedback.reference, feedback.attention_check, feedback.transition) == (
        0,
        instructed,
        True,
        None,
    )
    assert (after.game_score, after.window_count, after.window_points) == (
        before.game_score,
        before.window_count,
        before.window_points,
    )
    rating = Rating.objects.get(pk=feedback.rating_id)
    assert (rating.stage, rating.reference, rating.value) == (Pool.ATTENTION, instructed, wrong)
    assert CaptionPair.objects.get(pk=served.pair_id).human_count == 0  # in no consensus
    assert not Rating.objects.counted().filter(pk=rating.pk).exists()  # nor in the dataset


def test_the_pages_say_what_the_check_asked_and_offer_no_dispute_and_no_skip(client, checks):
    game_pairs(12, primes=[3.0, 3.0])
    profile = participant(client)
    RaterProfile.objects.filter(pk=profile.pk).update(game_serves=100)  # skips allowed
    for _ in range(3 * EVERY):
        page = client.get("/play/game/")
        served = page.context["served"]
        if _stage(served) == Pool.ATTENTION:
            break
        client.post("/play/game/", {"assignment": served.assignment_id, "value": "3"})
    else:
        raise AssertionError("no attention check served")
    # The screen offers no skip for it, nor a later one, though the rater's skips are open.
    assert (served.skip_open, served.skip_from) == (False, None)
    html = page.content.decode()
    assert re.search(r'id="skip-pair"[^>]* hidden', html) and "Skip: from game pair" not in html
    skipped = client.post("/play/skip/", {"assignment": served.assignment_id}, follow=True)
    said = " ".join(str(m) for m in skipped.context["messages"])
    assert "An attention check cannot be skipped: please choose the level its caption asks for." in said
    instructed = CaptionPair.objects.get(pk=served.pair_id).expert_rating
    answer = client.post("/play/game/", {"assignment": served.assignment_id, "value": str(instructed)}, follow=True)
    html = answer.content.decode()
    assert f"You chose {instructed}, as this attention check asked. Attention checks score no points." in html
    assert "Dispute this score" not in html and "Consensus rating" not in html


def test_the_draws_are_the_raters_own_and_apart_from_the_controls(settings):
    settings.RATINGGAME_STUDY = {**settings.RATINGGAME_STUDY, "ATTENTION_EVERY": 10}
    places = {seed: [s for s in range(100) if journey.attention_due(seed, s)] for seed in range(20)}
    assert all(len(found) == 10 for found in places.values())  # one in each block of ten
    assert len({tuple(found) for found in places.values()}) > 15  # a place of each rater's own
    settings.RATINGGAME_STUDY = {**settings.RATINGGAME_STUDY, "ATTENTION_EVERY": 0}
    assert not any(journey.attention_due(0, s) for s in range(100))


def _participant(external_id: str, outcome: str = "", minutes: float | None = None):
    from datetime import timedelta

    from annotators.models import Participation, RaterState
    from tests.ratinggame.journey_helpers import T0

    user = rater(RaterState.GAME)
    ended = None if minutes is None else T0 + timedelta(minutes=minutes)
    return Participation.objects.create(
        profile=user.rater,
        platform="prolific",
        external_id=external_id,
        entered_at=T0,
        last_entry_at=T0,
        outcome=outcome,
        ended_at=ended,
    )


def _answers(participation, values: list[int], instructed: int = 2) -> None:
    from tests.factories import rating_make

    for value in values:
        rating = rating_make(
            rater=participation.profile.user, pair=AttentionCheckFactory(expert_rating=instructed), value=value
        )
        Rating.objects.filter(pk=rating.pk).update(reference=instructed)  # as the game stores it


def test_reject_eligible_lists_who_failed_the_set_number_of_checks_never_the_screened_out(checks):
    from annotators.study.review import ATTENTION, reject_eligible

    failed_two, failed_one = _participant("a" * 24, "completed", 30), _participant("b" * 24, "completed", 30)
    screened = _participant("c" * 24, "screened_out", 5)
    _answers(failed_two, [2, 5, 1])
    _answers(failed_one, [2, 2, 4])
    _answers(screened, [1, 1])
    listed = reject_eligible()
    assert [(row.participation.external_id, row.reason) for row in listed] == [("a" * 24, ATTENTION)]
    assert listed[0].evidence == "2 of 3 attention checks answered otherwise than they asked"


def test_reject_eligible_lists_a_completion_3_sd_under_the_mean(checks):
    from annotators.study.review import FAST, reject_eligible

    minutes = [30, 31, 29, 30, 32, 28, 30, 31, 29, 30, 30]
    for index, spent in enumerate(minutes):
        _participant(f"{index:024x}", "completed", spent)
    quick = _participant("f" * 24, "completed", 2)
    # mean 27.67 min, sd 8.15: 3 SD below is 3.22 min; 2 min is under it, 28 is not.
    listed = reject_eligible()
    assert [(row.participation, row.reason) for row in listed] == [(quick, FAST)]
    assert listed[0].evidence == "completed in 2.0 min; the mean is 27.7 min, 3 SD below it 3.2 min"
    # Without it no one of the eleven lies 3 SD under their mean: none is listed.
    quick.delete()
    _participant("e" * 24, "", None)  # an open session is not a completion
    assert reject_eligible() == []


def test_the_pay_page_lists_them(client, checks):
    from annotators.roles import RESEARCHER
    from tests.factories import user_with_role

    _answers(_participant("a" * 24, "completed", 30), [5, 5])
    client.force_login(user_with_role(RESEARCHER))
    html = client.get("/research/pay/").content.decode()
    assert 'id="reject-eligible"' in html
    table = html.split('id="reject-table"')[1].split("</table>")[0]
    assert "a" * 24 in table and "Failed attention checks" in table


def test_the_next_image_guessed_is_the_next_serves_at_an_attention_check_too(checks):
    """The rating screen fetches ahead the image the next serve will show (``prefetch``): for a
    participant, an attention check's when the serve draws one, as the serve itself decides it."""
    game_pairs(30, primes=[3.0, 3.0])
    user, clock = participant(Client()).user, Clock()
    served = game.pair_serve(rater=user, now=clock.now)
    stages = []
    for _ in range(3 * EVERY):
        guessed = next_pair_image(rater=user, served=served)
        feedback = game.rating_submit(
            rater=user, assignment_id=served.assignment_id, value=3, now=clock.tick(1), serve_next=True
        )
        served = feedback.next
        stages.append(_stage(served))
        assert guessed.pk == CaptionPair.objects.get(pk=served.pair_id).image_id, stages
    assert Pool.ATTENTION in stages
