"""Delete my data: the rater's ratings stop counting (exports, consensus), the account is
anonymised and closed, and the withdrawal is logged."""

import pytest
from django.contrib.auth import authenticate
from django.urls import reverse
from rest_framework.authtoken.models import Token

from annotators import services
from annotators.models import RaterAction, RaterState
from ratinggame.game.withdrawal import WITHDRAWN_REASON, rater_withdraw
from ratinggame.models import CaptionPair, Rating
from tests.ratinggame.journey_helpers import (
    T0,
    Clock,
    assert_pairs_consistent,
    game_pairs,
    rate_next,
    rater,
    seed_ratings,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("three_second_rules")]
PASSWORD = "correct horse battery staple"


def test_withdrawal_excludes_the_ratings_from_consensus_and_anonymises_the_account():
    pairs = game_pairs(2)
    for pair in pairs:
        seed_ratings(pair, [4, 4])
    user = rater(RaterState.GAME, display_name="Ada", game_score=3)
    clock = Clock(T0)
    rate_next(user, 2, clock)
    rate_next(user, 2, clock)
    assert CaptionPair.objects.get(pk=pairs[0].pk).human_count == 3
    Token.objects.create(user=user)

    assert rater_withdraw(user=user) == 2
    assert set(Rating.objects.filter(rater=user).values_list("excluded", "excluded_reason")) == {
        (True, WITHDRAWN_REASON)
    }
    # Out of the consensus: each pair is back to the two other raters' ratings.
    assert [p.human_count for p in CaptionPair.objects.filter(pk__in=[p.pk for p in pairs])] == [2, 2]
    assert not Rating.objects.counted().filter(rater=user).exists()
    assert_pairs_consistent()

    user.refresh_from_db()
    assert (user.username, user.email, user.is_active) == (f"withdrawn-{user.pk}", "", False)
    assert authenticate(username=user.username, password=PASSWORD) is None
    assert not user.has_usable_password() and not Token.objects.filter(user=user).exists()
    assert (user.rater.display_name, user.rater.on_leaderboard) == ("", False)
    assert "Ada" not in [row["name"] for row in services.leaderboard(period="all")]
    action = RaterAction.objects.get(rater=user.rater)
    assert action.action == "withdraw" and "2 rating(s) excluded" in action.reason


def test_the_page_asks_for_confirmation_then_logs_the_rater_out(client):
    user = rater(RaterState.GAME)
    client.force_login(user)
    assert "This cannot be undone." in client.get(reverse("data_delete")).content.decode()
    unconfirmed = client.post(reverse("data_delete"), {})
    assert unconfirmed["Location"] == reverse("data_delete")
    assert "Tick the box to confirm" in client.get(reverse("data_delete")).content.decode()
    user.refresh_from_db()
    assert user.is_active

    done = client.post(reverse("data_delete"), {"confirm": "yes"})
    assert done["Location"] == reverse("home")
    assert "You have withdrawn" in client.get(reverse("home")).content.decode()
    assert client.get(reverse("annotators:me"))["Location"].startswith(reverse("login"))
    user.refresh_from_db()
    assert not user.is_active


@pytest.mark.parametrize(
    ("rated", "page_says", "done_says"),
    [
        (0, None, "You have withdrawn: your account is anonymised"),
        (1, "your 1 rating stops counting at once: it is left out", "your rating no longer counts, and"),
        (2, "your 2 ratings stop counting at once: they are left out", "your 2 ratings no longer count, and"),
    ],
)
def test_the_page_and_its_answer_count_the_ratings_in_good_english(client, rated, page_says, done_says):
    pairs = game_pairs(rated)
    for pair in pairs:
        seed_ratings(pair, [4, 4])
    user = rater(RaterState.GAME)
    clock = Clock(T0)
    for _ in pairs:
        rate_next(user, 4, clock)
    client.force_login(user)
    page = " ".join(client.get(reverse("data_delete")).content.decode().split())
    if page_says:
        assert page_says in page
    assert "stops counting" not in page if rated != 1 else "they are left out" not in page
    assert " 0 rating" not in page
    client.post(reverse("data_delete"), {"confirm": "yes"})
    assert done_says in client.get(reverse("home")).content.decode()
