"""The rater's journey (SPEC section 2): every rule and number of it, in one place.

Consent -> tutorial (10 expert-rated pairs, pass mark 10 of 20) -> the game, or probation
(rounds of 20 expert-rated pairs, pass mark 25 of 40) -> the game. The first 20 game ratings
after every entry to the game form the qualification window, which needs 25 points; a failed
window resets the game score, excludes the window's ratings and sends the rater back to
probation. Game levels come from the game score. Every rating screen waits a minimum time
before it takes a rating (``min_seconds``).

No queries here: where each rater is, their progress and the moves between steps are in
``annotators.progress``; the rating screens that apply these rules are in ``ratinggame.game``.
"""

import math
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import models

TUTORIAL_SIZE = 10
TUTORIAL_MAX_POINTS = 2 * TUTORIAL_SIZE  # 2 points for each expert rating matched
TUTORIAL_PASS_POINTS = 10
PROBATION_SIZE = 20
PROBATION_MAX_POINTS = 2 * PROBATION_SIZE
PROBATION_PASS_POINTS = 25
WINDOW_SIZE = 20
WINDOW_NEEDED = 25
WINDOW_FAILED_REASON = "failed qualification window"
# Game levels: level 1 from the start, 2 from 250 points, then 1000, 2000 and 3000.
LEVEL_THRESHOLDS = (250, 1000, 2000, 3000)


class Step(models.TextChoices):
    """Where a rater may be: the stored state (``RaterState``) plus consent, which comes first.

    Consent is not a stored state: it is read from ``RaterProfile.consent_at``, so a rater
    who has not consented yet keeps the state staff gave them (suspended, say).
    """

    CONSENT = "consent", "Consent"
    TUTORIAL = "tutorial", "Tutorial"
    PROBATION = "probation", "Probation"
    GAME = "game", "Game"
    SUSPENDED = "suspended", "Suspended"


PLAYING_STEPS = frozenset({Step.TUTORIAL, Step.PROBATION, Step.GAME})


def step_of(profile) -> Step:
    """The state machine, on a rater profile in hand: suspended, else consent, else the stored state."""
    if profile.state == Step.SUSPENDED:
        return Step.SUSPENDED
    if profile.consent_at is None:
        return Step.CONSENT
    return Step(profile.state)


def min_seconds(stage: str) -> float:
    """The minimum seconds between serving a pair of ``stage`` and accepting its rating (SPEC 2.4).

    The same for every stage today (RATINGGAME_MIN_SECONDS_PER_RATING, default 3); a delay per
    stage or pool is a change to this function only.
    """
    return float(settings.RATINGGAME["MIN_SECONDS_PER_RATING"])


def min_delay(stage: str) -> timedelta:
    return timedelta(seconds=min_seconds(stage))


def tutorial_pass_mark(size: int) -> int:
    """10 of 20 points; scaled (half the maximum) when fewer than 10 tutorial pairs exist."""
    return math.ceil(TUTORIAL_PASS_POINTS * size / TUTORIAL_SIZE)


def probation_pass_mark(size: int) -> int:
    """25 of 40 points; scaled (5/8 of the maximum, rounded up) when fewer than 20 pairs exist."""
    return math.ceil(PROBATION_PASS_POINTS * size / PROBATION_SIZE)


def rules() -> dict[str, int]:
    """The journey's numbers, for the pages and documents that explain them to people."""
    return {
        "tutorial_size": TUTORIAL_SIZE,
        "tutorial_pass": TUTORIAL_PASS_POINTS,
        "tutorial_max": TUTORIAL_MAX_POINTS,
        "probation_size": PROBATION_SIZE,
        "probation_pass": PROBATION_PASS_POINTS,
        "probation_max": PROBATION_MAX_POINTS,
        "window_size": WINDOW_SIZE,
        "window_needed": WINDOW_NEEDED,
    }


def level_for(points: int) -> int:
    """Game level: 1, then 2 from 250 points, 3 from 1000, 4 from 2000, 5 from 3000."""
    return 1 + sum(points >= threshold for threshold in LEVEL_THRESHOLDS)


def next_level_at(points: int) -> int | None:
    """Points needed for the next level; None at the top level."""
    return next((threshold for threshold in LEVEL_THRESHOLDS if points < threshold), None)


@dataclass(frozen=True)
class Window:
    """The qualification window (SPEC section 2.3): game ratings so far in it and their points."""

    count: int  # 0..WINDOW_SIZE
    points: int
    size: int = WINDOW_SIZE
    needed: int = WINDOW_NEEDED

    @property
    def open(self) -> bool:
        return self.count < self.size

    @property
    def closing(self) -> bool:
        """The next game rating is the window's last."""
        return self.count == self.size - 1

    def after(self, points: int) -> "Window":
        """The window after one more game rating worth ``points`` (unchanged once it is closed)."""
        if not self.open:
            return self
        return Window(count=self.count + 1, points=self.points + points)

    @property
    def outcome(self) -> str | None:
        """ "window_passed" or "window_failed" once the last rating of the window is in; else None."""
        if self.open:
            return None
        return "window_passed" if self.points >= self.needed else "window_failed"
