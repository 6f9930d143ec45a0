"""The API page's worked requests, run as written (curl and jq in bash) against a live server: a
script signs up, consents, is served its first pair and rates it after the server's 3 seconds."""

import pytest

from ratinggame.models import Rating
from tests.docs.api_page import needs_curl_and_jq, play_the_script
from tests.factories import TutorialPairFactory

pytestmark = pytest.mark.django_db(transaction=True)


@needs_curl_and_jq
def test_the_api_pages_script_plays_as_written(live_server, settings):
    pair = TutorialPairFactory(caption="A red box on green grass", expert_rating=4)
    answer = play_the_script(live_server.url, pair)
    assert answer["points"] == 2
    assert Rating.objects.get().rater.username == "rater7"
