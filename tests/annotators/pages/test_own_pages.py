"""The rater's own pages: the leaderboard and its pseudonyms, the personal page, and what every
page carries (lang, one <main>, labelled controls)."""

import re
from datetime import timedelta
from html import unescape

import pytest
from django.urls import reverse
from django.utils import timezone

from annotators.models import RaterProfile, RaterState
from ratinggame.models import CaptionPair, Pool, Rating
from tests.annotators.pages.helpers import (
    SPEC_LEVEL_5,
    Page,
    body,
    rate,
    rater,
)
from tests.factories import CaptionPairFactory, ProbationPairFactory, rating_make
from tests.ratinggame.journey_helpers import seed_ratings

pytestmark = pytest.mark.django_db


# --- Leaderboard and personal page -----------------------------------------------------------


def test_leaderboard_opt_out_hides_the_rater(client):
    rater(RaterState.GAME, game_score=300, display_name="Ada")
    bob = rater(RaterState.GAME, game_score=120, display_name="Bob")
    page = body(client.get(reverse("annotators:leaderboard")))
    assert page.index("Ada") < page.index("Bob")  # ranked by points

    client.force_login(bob)
    response = client.post(reverse("annotators:me"), {"display_name": "Bob"})  # box unticked: opt out
    assert response.status_code == 302
    page = body(client.get(reverse("annotators:leaderboard")))
    assert "Ada" in page
    assert "Bob" not in page


def test_the_leaderboard_highlights_the_raters_own_row_and_asks_for_a_pseudonym(client):
    rater(RaterState.GAME, game_score=300, display_name="Ada")
    me = rater(RaterState.GAME, game_score=120)
    client.force_login(me)
    page = body(client.get(reverse("annotators:leaderboard")))
    own = re.findall(r'<tr class="me" aria-current="true">.*?</tr>', page, re.S)
    assert len(own) == 1 and "Anonymous rater" in own[0] and "(you)" in own[0]
    assert 'id="pseudonym-prompt"' in page
    assert 'id="pseudonym-prompt"' in body(client.get(reverse("annotators:me")))
    client.post(reverse("annotators:me"), {"display_name": "Quill", "on_leaderboard": "on"})
    page = body(client.get(reverse("annotators:leaderboard")))
    assert 'id="pseudonym-prompt"' not in page
    assert "Quill" in re.findall(r'<tr class="me" aria-current="true">.*?</tr>', page, re.S)[0]


@pytest.mark.parametrize("copy", ["Ada", "ADA", "  ada "])
def test_a_pseudonym_cannot_copy_another_raters_whatever_its_case(client, copy):
    ada = rater(RaterState.GAME, game_score=300, display_name="Ada")
    me = rater(RaterState.GAME, game_score=120, display_name="Quill")
    client.force_login(me)
    response = client.post(reverse("annotators:me"), {"display_name": copy, "on_leaderboard": "on"})
    assert response.status_code == 400
    assert "Another rater uses this pseudonym already" in body(response)
    assert RaterProfile.objects.get(user=me).display_name == "Quill"
    assert RaterProfile.objects.get(user=ada).display_name == "Ada"
    # Their own name in another case, and the anonymous name refused with its own reason.
    assert client.post(reverse("annotators:me"), {"display_name": "QUILL", "on_leaderboard": "on"}).status_code == 302
    assert RaterProfile.objects.get(user=me).display_name == "QUILL"
    refused = client.post(reverse("annotators:me"), {"display_name": "anonymous rater", "on_leaderboard": "on"})
    assert "leave the field empty" in body(refused)


def test_the_database_refuses_a_copied_pseudonym_written_around_the_service():
    from django.db import IntegrityError, transaction

    rater(RaterState.GAME, display_name="Ada")
    copier = RaterProfile.objects.get(user=rater(RaterState.GAME))
    with pytest.raises(IntegrityError), transaction.atomic():
        RaterProfile.objects.filter(pk=copier.pk).update(display_name="aDA")
    rater(RaterState.GAME)  # many raters have no pseudonym: the empty name is nobody's
    assert RaterProfile.objects.filter(display_name="").count() == 2


def test_personal_page_shows_record_and_saves_display_name(client):
    pair = CaptionPairFactory(pool=Pool.GAME)
    seed_ratings(pair, [4, 4])
    user = rater(RaterState.GAME)
    client.force_login(user)
    rate(client, user, "game", 4)  # matches the consensus 4: 2 points
    page = body(client.get(reverse("annotators:me")))
    assert re.search(r'id="stat-ratings">1<', page)
    assert re.search(r'id="stat-agreement">100 %<', page)
    assert re.search(r'id="stat-streak">1<', page)
    assert re.search(r'id="stat-score">2<', page)
    assert re.search(r'id="stat-next">250 points<', page)

    client.post(reverse("annotators:me"), {"display_name": "  Grace  ", "on_leaderboard": "on"})
    profile = RaterProfile.objects.get(user=user)
    assert (profile.display_name, profile.on_leaderboard) == ("Grace", True)


def test_a_failed_window_leaves_its_ratings_on_the_personal_page_as_excluded_and_says_why(client):
    CaptionPairFactory(pool=Pool.GAME)
    ProbationPairFactory(expert_rating=3)
    user = rater(RaterState.GAME, window_count=19, window_points=20, game_score=20)
    earlier = [CaptionPairFactory(pool=Pool.GAME) for _ in range(19)]
    for pair in earlier:
        # The window's first 19 ratings, as the game stored them (in their pairs' aggregates too).
        rating_make(rater=user, pair=pair, value=3, submitted_at=timezone.now() - timedelta(minutes=5))
    CaptionPair.objects.filter(pk__in=[pair.pk for pair in earlier]).update(human_count=1, human_sum=3, human_sumsq=9)
    staff_excluded = CaptionPairFactory(pool=Pool.GAME)
    rating_make(rater=user, pair=staff_excluded, value=2, excluded=True, excluded_reason="a duplicate account")
    client.force_login(user)
    _, response = rate(client, user, "game", 3)  # the 20th: 20 of the 25 points needed, the window fails
    assert "Qualification failed" in body(client.get(response["Location"]))
    page = unescape(body(client.get(reverse("annotators:me"))))
    assert re.search(r'Game ratings that count</dt><dd id="stat-ratings">0<', page)
    assert re.search(r'Game ratings excluded</dt><dd id="stat-excluded">21<', page)
    listed = re.sub(r"\s+", " ", re.search(r'<ul class="excluded-list" id="excluded-list">(.*?)</ul>', page, re.S)[1])
    assert (
        "<strong>20 ratings</strong> from a qualification window that failed: your first 20 game ratings after "
        "entering the game scored fewer than the 25 points needed" in listed
    )
    assert "<strong>1 rating</strong> excluded: a duplicate account." in listed
    assert Rating.objects.filter(rater=user, excluded=True).count() == 21


# --- Every page: lang, one <main>, labelled controls ------------------------------------------


def test_pages_have_lang_a_main_landmark_and_labelled_radios(client, tutorial):
    for url in (reverse("home"), reverse("annotators:signup"), reverse("login"), reverse("annotators:leaderboard")):
        page = Page(body(client.get(url)))
        assert (page.lang, page.mains) == ("en", 1), url

    client.force_login(rater(consent=False))
    assert Page(body(client.get(reverse("annotators:consent")))).mains == 1

    user = rater()
    client.force_login(user)
    rating_screen = Page(body(client.get(reverse("rate", args=["tutorial"]))))
    assert (rating_screen.lang, rating_screen.mains) == ("en", 1)
    assert sorted(rating_screen.radios) == [f"value-{v}" for v in range(1, 6)]
    assert set(rating_screen.radios) <= rating_screen.label_fors
    assert rating_screen.legends == 1
    # The image to rate is named; the guide's examples are described by their captions (alt="").
    assert all("alt" in img for img in rating_screen.images)
    assert [img["alt"] for img in rating_screen.images if img["alt"]] == ["Image to rate"]
    assert rating_screen.dialogs == ["guide"]
    assert rating_screen.live_regions >= 1  # the countdown's end is announced

    html = body(client.get(reverse("rate", args=["tutorial"])))
    assert SPEC_LEVEL_5 in html  # the Rating Guide has the rubric verbatim

    assignment_id, _ = rate(client, user, "tutorial", 5)
    feedback = Page(body(client.get(reverse("feedback", args=[assignment_id]))))
    assert (feedback.lang, feedback.mains, feedback.dialogs) == ("en", 1, ["guide"])
    assert feedback.live_regions >= 1

    for url in (reverse("annotators:intro"), reverse("annotators:me")):
        page = Page(body(client.get(url)))
        assert (page.lang, page.mains) == ("en", 1), url
