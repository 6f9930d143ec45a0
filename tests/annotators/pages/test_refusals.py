"""What the rating pages refuse, with a clear message and the right status, storing nothing: too
early, an invalid value, a second submission, another rater's pair, an expired one."""

import re
from datetime import timedelta
from html import unescape

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from ratinggame.models import Assignment, Rating
from tests.annotators.pages.helpers import (
    body,
    look_long_enough,
    open_assignment_id,
    open_assignment_id_in,
    rate,
    rater,
)

pytestmark = pytest.mark.django_db


# --- Rejections: clear messages, right status codes, nothing stored --------------------------


def test_the_guide_beside_a_tutorial_pair_never_shows_a_pair_the_rater_has_not_rated(client, tutorial):
    # The guide's examples are tutorial pairs with their expert ratings: an unrated one, the pair
    # on the screen above all, would hand the rater its answer.
    user = rater()
    client.force_login(user)
    first = body(client.get(reverse("rate", args=["tutorial"])))
    assert tutorial[0].caption in first  # the pair being rated
    assert "guide-example" not in first
    assignment_id = open_assignment_id_in(first)
    look_long_enough(user)
    client.post(reverse("rate", args=["tutorial"]), {"assignment": assignment_id, "value": "4"})
    second = body(client.get(reverse("rate", args=["tutorial"])))
    assert tutorial[1].caption in second
    # The pair just rated (expert 5, its answer now shown in the feedback) is the one example.
    assert second.count('class="guide-example"') == 1
    assert f"rated 5 by the experts: “{tutorial[0].caption}”" in second
    assert f"“{tutorial[1].caption}”" not in second


def test_early_submit_redirects_to_the_pair_with_the_message_and_the_choice(client, tutorial):
    user = rater()
    client.force_login(user)
    assignment_id = open_assignment_id(client.get(reverse("rate", args=["tutorial"])))
    response = client.post(reverse("rate", args=["tutorial"]), {"assignment": assignment_id, "value": "4"})
    # Post/redirect/get: reloading what follows sends no rating again.
    assert response["Location"] == reverse("rate", args=["tutorial"])
    html = body(client.get(response["Location"]))
    assert "Take at least 3 seconds to look at the pair before rating it." in html
    # The same pair again, with the rater's choice kept.
    assert open_assignment_id_in(html) == assignment_id
    assert re.search(r'value="4"[^>]*checked', html)
    # The message is shown once; a reload once the seconds have passed still stores nothing.
    look_long_enough(user)
    again = body(client.get(reverse("rate", args=["tutorial"])))
    assert "Take at least 3 seconds" not in again
    assert not Rating.objects.exists()
    assert Assignment.objects.get(pk=assignment_id).submitted_at is None


def test_countdown_comes_from_the_servers_times(client, tutorial):
    user = rater()
    client.force_login(user)
    html = body(client.get(reverse("rate", args=["tutorial"])))
    now_ms = int(re.search(r'data-server-now-ms="(\d+)"', html).group(1))
    min_ms = int(re.search(r'data-min-submit-ms="(\d+)"', html).group(1))
    assert 2500 < min_ms - now_ms <= 3000
    look_long_enough(user, seconds=2)
    reloaded = client.get(reverse("rate", args=["tutorial"]))
    # Reload-safe: the same assignment, and 2 s of the 3 s already gone.
    assert open_assignment_id(reloaded) == Assignment.objects.get().pk
    html = body(reloaded)
    now_ms = int(re.search(r'data-server-now-ms="(\d+)"', html).group(1))
    min_ms = int(re.search(r'data-min-submit-ms="(\d+)"', html).group(1))
    assert 500 < min_ms - now_ms <= 1000


def test_invalid_value_is_refused_with_the_screen_again(client, tutorial):
    user = rater()
    client.force_login(user)
    for value in ("", "3.5", "6", "x"):
        assignment_id, response = rate(client, user, "tutorial", value)
        assert response["Location"] == reverse("rate", args=["tutorial"])
        page = client.get(response["Location"])
        assert "Choose a rating from 1 to 5." in body(page)
        assert open_assignment_id(page) == assignment_id
    assert not Rating.objects.exists()


def test_a_second_submission_shows_the_first_result_and_says_when_its_rating_was_not_taken(client, tutorial):
    user = rater()
    client.force_login(user)
    assignment_id, first = rate(client, user, "tutorial", 5)
    feedback = reverse("feedback", args=[assignment_id])
    # A double click sends the same rating again: the first result, and nothing alarming.
    double = client.post(reverse("rate", args=["tutorial"]), {"assignment": assignment_id, "value": 5})
    assert first["Location"] == double["Location"] == feedback
    assert "not taken" not in body(client.get(feedback))
    # Another tab (the same session), still showing the pair, sends another rating.
    other_tab = Client()
    other_tab.cookies = client.cookies
    second = other_tab.post(reverse("rate", args=["tutorial"]), {"assignment": assignment_id, "value": 1})
    assert second["Location"] == feedback
    html = unescape(body(other_tab.get(feedback)))
    assert re.search(r'Your rating</dt><dd class="fb-big">5<', html)
    assert (
        "This pair was already rated (in another tab or window): your rating 1 was not taken. "
        "The rating stored is 5, and this page shows its result." in html
    )
    assert "your rating 1 was not taken" in re.search(r'id="feedback-announce"[^>]*data-text="([^"]*)"', html)[1]
    assert Rating.objects.get().value == 5
    assert "not taken" not in body(client.get(feedback))  # said once


def test_another_raters_pair_is_forbidden(client, tutorial):
    owner, intruder = rater(), rater()
    client.force_login(owner)
    assignment_id, _ = rate(client, owner, "tutorial", 5)
    client.force_login(intruder)
    response = client.post(reverse("rate", args=["tutorial"]), {"assignment": assignment_id, "value": 3}, follow=True)
    assert response.redirect_chain[0] == (reverse("annotators:play"), 302)
    assert "This pair was served to someone else." in body(response)
    assert client.get(reverse("feedback", args=[assignment_id])).status_code == 403
    missing = client.post(reverse("rate", args=["tutorial"]), {"assignment": 999999, "value": 3}, follow=True)
    assert "There is no such pair to rate." in body(missing)
    assert Rating.objects.count() == 1


def test_expired_pair_offers_the_next_one(client, tutorial):
    user = rater()
    client.force_login(user)
    assignment_id = open_assignment_id(client.get(reverse("rate", args=["tutorial"])))
    Assignment.objects.filter(pk=assignment_id).update(
        served_at=timezone.now() - timedelta(hours=1), expires_at=timezone.now() - timedelta(minutes=1)
    )
    response = client.post(reverse("rate", args=["tutorial"]), {"assignment": assignment_id, "value": 3}, follow=True)
    assert response.redirect_chain[-1] == (reverse("rate", args=["tutorial"]), 302)
    html = body(response)
    assert "This pair is no longer open for rating. Please rate the next one." in html
    assert open_assignment_id(response) != assignment_id  # a new assignment of the pair to rate
    assert not Rating.objects.exists()
