"""Helpers of the rater's page tests: raters in a given step, a pair looked at long enough, the
rating form's assignment, and what the accessibility checks read of a page."""

import re
from datetime import timedelta
from html.parser import HTMLParser

from django.db.models import F
from django.urls import reverse
from django.utils import timezone

from annotators.models import RaterState
from ratinggame.models import Assignment
from tests.ratinggame.journey_helpers import rater as journey_rater

EXPERTS = [5, 4, 3, 2, 1, 3, 4, 2, 5, 1]
PASSWORD = "a long enough pass phrase 42"
# SPEC section 1, rating 5, as the Rating Guide must show it.
SPEC_LEVEL_5 = (
    "Objects, a general scene, and actions are correctly identified if present in the image. "
    "The caption describes what is seen and where things are in space. "
    "Interpretation of overall setting and/or event is included."
)


def rater(state=RaterState.TUTORIAL, consent=True, **fields):
    """The journey tests' annotator, on the real clock (the pages compare times with now)."""
    return journey_rater(state, now=timezone.now(), consent=consent, **fields)


def look_long_enough(user, seconds: float = 4) -> None:
    """The rater looks at the open pair for ``seconds``: its server-side served time moves back."""
    Assignment.objects.filter(rater=user, submitted_at__isnull=True).update(
        served_at=F("served_at") - timedelta(seconds=seconds)
    )


def open_assignment_id(response) -> int:
    return open_assignment_id_in(response.content.decode())


def open_assignment_id_in(html: str) -> int:
    match = re.search(r'name="assignment" value="(\d+)"', html)
    assert match, "the rating form carries its assignment"
    return int(match.group(1))


def rate(client, user, stage: str, value) -> tuple[int, object]:
    """Open the stage's rating screen, look for 4 s, submit ``value``; (assignment id, response)."""
    page = client.get(reverse("rate", args=[stage]))
    assert page.status_code == 200
    assignment_id = open_assignment_id(page)
    look_long_enough(user)
    return assignment_id, client.post(reverse("rate", args=[stage]), {"assignment": assignment_id, "value": value})


class Page(HTMLParser):
    """What the accessibility checks need from a page."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.lang = None
        self.mains = 0
        self.radios: list[str] = []
        self.label_fors: set[str] = set()
        self.legends = 0
        self.images: list[dict] = []
        self.dialogs: list[str] = []
        self.live_regions = 0
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "html":
            self.lang = attrs.get("lang")
        elif tag == "main":
            self.mains += 1
        elif tag == "input" and attrs.get("type") == "radio":
            self.radios.append(attrs.get("id", ""))
        elif tag == "label" and attrs.get("for"):
            self.label_fors.add(attrs["for"])
        elif tag == "legend":
            self.legends += 1
        elif tag == "img":
            self.images.append(attrs)
        elif tag == "dialog":
            self.dialogs.append(attrs.get("id", ""))
        if attrs.get("aria-live") == "polite":
            self.live_regions += 1


def body(response) -> str:
    return response.content.decode()
