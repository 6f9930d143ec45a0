"""The rater's journey (SPEC section 2): every rule and number of it, in one place.

Consent -> tutorial (10 expert-rated pairs, pass mark 10 of 20) -> the game, or probation
(rounds of 20 expert-rated pairs, pass mark 25 of 40) -> the game. The first 20 game ratings
after every entry to the game form the qualification window, which needs 25 points. Game
levels come from the game score. Every rating screen waits a minimum time before it takes a
rating (``min_seconds``).

Quality control after qualification (SPEC 2.5): one serve in every block of
``control_every()`` game serves, at a place drawn per rater and block (``control_due``), is a
control pair, rated by experts; each control rating gets the rubric's agreement score (exact 2,
adjacent 1, otherwise 0), and the drift rule watches the mean over the rater's latest
``drift_window()`` of them. A rater may skip a game pair without a reason, up to a share of
their serves (``skips_allowed``).

A failed window and a drift end the same way, decided here as one ``Transition`` (reset the game
score, exclude ratings, back to probation, with the reason) that the game applies in one place
(``ratinggame.game.transitions``).

No queries here: where each rater is, their progress and the moves between steps are in
``annotators.progress``; the rating screens that apply these rules are in ``ratinggame.game``.
"""

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import models

from annotators.competency.pcm import rubric_score
from annotators.study.settings import study

TUTORIAL_SIZE = 10
TUTORIAL_MAX_POINTS = 2 * TUTORIAL_SIZE  # 2 points for each expert rating matched
TUTORIAL_PASS_POINTS = 10
PROBATION_SIZE = 20
PROBATION_MAX_POINTS = 2 * PROBATION_SIZE
PROBATION_PASS_POINTS = 25
WINDOW_SIZE = 20
WINDOW_NEEDED = 25
WINDOW_FAILED_REASON = "failed qualification window"
DRIFT_REASON = "agreement with the experts on the quality-check pairs fell too low"
# Skips are not allowed in a rater's first game serves: the qualification window is not a place
# to pick easy pairs.
SKIPS_FROM_SERVE = 20
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
        "control_every": control_every(),
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


# --- Quality control after qualification (SPEC 2.5) --------------------------------------------


def seeded_draw(seed: int, *keys: int, bound: int) -> int:
    """A number in [0, bound) fixed by a rater's seed and ``keys``: the same draw every time it is
    asked (a page reload, a retried request), independent between raters and between keys."""
    digest = hashlib.blake2b(repr((seed, *keys)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % bound


def control_every() -> int:
    """One game serve in this many is a control pair (0: no control pairs)."""
    return max(0, int(settings.RATINGGAME["CONTROL_EVERY"]))


def attention_every() -> int:
    """One game serve of a study participant's in this many is an attention check (0: none)."""
    return study().attention_every


def attention_due(seed: int, serve: int) -> bool:
    """Whether a participant's game serve ``serve`` (0-based) is their block's attention check
    (SPEC 7): one in each block of ``attention_every()`` serves, at a place drawn per rater and
    block, as a control's is (with keys of its own). A block whose check falls on the serve of a
    control has none: the control is served (the rate is then a little below one in ``every``)."""
    every = attention_every()
    if every == 0:
        return False
    block, place = divmod(serve, every)
    return place == seeded_draw(seed, ATTENTION_KEY, block, bound=every)


ATTENTION_KEY = 7  # keeps the attention checks' draws apart from the controls' (keys (block,))


def attention_failed(value: int, instructed: int) -> bool:
    """An attention check is failed by any answer but the one its caption asked for."""
    return value != instructed


def control_due(seed: int, serve: int) -> bool:
    """Whether the rater's game serve number ``serve`` (0-based) is their block's control pair.

    Serves come in blocks of ``control_every()``; the control's place in each block is drawn
    per rater and block, so it cannot be predicted from the count.
    """
    every = control_every()
    if every == 0:
        return False
    block, place = divmod(serve, every)
    return place == seeded_draw(seed, block, bound=every)


def control_owed_serve(seed: int, serves: int) -> int:
    """Where the control that replaces a skipped or reported one comes (SPEC 2.5): a game serve
    number drawn among the next ``control_every()`` after the rater's ``serves`` so far, as the
    block's own control is drawn, so that nothing after a skip says what was skipped."""
    return serves + seeded_draw(seed, serves, -1, bound=max(1, control_every()))


def control_due_now(seed: int, serve: int, owed_at: int | None, owed: int = 0) -> bool:
    """Whether game serve ``serve`` is a control: the block's own (``control_due``), or one of the
    ``owed`` since controls were skipped or reported, the next at ``owed_at`` (``control_owed_serve``)."""
    if control_every() == 0:
        return False
    return control_due(seed, serve) or (owed > 0 and owed_at is not None and serve >= owed_at)


def control_owed_after(seed: int, serve: int, owed_at: int | None, owed: int) -> tuple[int | None, int]:
    """(the next owed control's serve, how many are owed) once game serve ``serve`` was a control.
    One serve takes one check: the block's own first (the owed ones wait, drawn again when they
    fell on it), else one of the owed; so a skip never takes a check away."""
    if owed == 0 or owed_at is None:
        return None, 0
    if serve < owed_at:
        return owed_at, owed  # the block's own check, before the owed one's serve
    if control_due(seed, serve):
        return control_owed_serve(seed, serve + 1), owed
    owed -= 1
    return (control_owed_serve(seed, serve + 1) if owed else None), owed


def drift_window() -> int:
    """How many of the rater's latest control ratings the drift rule averages."""
    return max(1, int(settings.RATINGGAME["DRIFT_WINDOW"]))


def drift_threshold() -> float:
    """The mean agreement (0..2) under which the drift rule sends a rater back to probation."""
    return float(settings.RATINGGAME["DRIFT_THRESHOLD"])


def control_agreement(value: int, expert: int) -> int:
    """A control rating's agreement with the expert rating: exact 2, adjacent 1, otherwise 0."""
    return rubric_score(value, expert)


def skip_percent() -> int:
    """The share of game serves after the first ``SKIPS_FROM_SERVE`` that a rater may skip (%)."""
    return max(0, int(settings.RATINGGAME["SKIP_PERCENT"]))


def skips_allowed(serves: int) -> int:
    """Game pairs a rater may have skipped in all after ``serves`` game serves: none in the first
    ``SKIPS_FROM_SERVE``, then ``SKIP_PERCENT`` of the serves after them."""
    return max(0, serves - SKIPS_FROM_SERVE) * skip_percent() // 100


def skip_open(serves: int, used: int) -> bool:
    """Whether a rater who used ``used`` skips may skip the pair of their game serve ``serves``
    (the count with that serve, as ``RaterProfile.game_serves`` holds it once the pair is served)."""
    return used < skips_allowed(serves)


def next_skip_serve(used: int) -> int | None:
    """The game serve (1-based: the rater's game pair number) from which a rater who used ``used``
    skips may skip again (``skips_allowed`` of it exceeds ``used``); None when skips are off."""
    percent = skip_percent()
    if percent == 0:
        return None
    return SKIPS_FROM_SERVE + -(-(used + 1) * 100 // percent)


@dataclass(frozen=True)
class Transition:
    """What the journey decided after a game rating, for the game to apply in one place: reset
    the game score, exclude ratings (kept for audit, out of every consensus and export), send the
    rater back to probation, with the reason in the ratings, the staff action log and the page."""

    name: str  # the feedback's transition: "window_failed" or "drift"
    reason: str  # the excluded ratings' reason and the staff action log's
    exclude_ids: tuple[int, ...] = ()  # these ratings ...
    exclude_since: datetime | None = None  # ... and every game rating from this time on
    reset_score: bool = True
    enter_probation: bool = True


def score_after(score: int, points: int, transition: Transition | None) -> int:
    """The game score after a rating worth ``points``: 0 when the rating ends in a reset."""
    return 0 if transition is not None and transition.reset_score else score + points


def window_transition(window: "Window", window_rating_ids: Sequence[int]) -> Transition | None:
    """SPEC 2.3: the window just closed with too few points: its ratings go, with the score."""
    if window.outcome != "window_failed":
        return None
    return Transition(name="window_failed", reason=WINDOW_FAILED_REASON, exclude_ids=tuple(window_rating_ids))


@dataclass(frozen=True)
class ControlResult:
    """One control rating: when it was made and its agreement with the expert (0, 1 or 2)."""

    submitted_at: datetime
    agreement: int


def drift_mean(controls: Sequence[ControlResult]) -> float | None:
    """The mean agreement over the latest ``drift_window()`` control ratings; None with fewer."""
    latest = controls[-drift_window() :]
    if len(latest) < drift_window():
        return None
    return sum(result.agreement for result in latest) / len(latest)


def drift_transition(controls: Sequence[ControlResult], window: "Window") -> Transition | None:
    """SPEC 2.5: the drift rule, after a control rating. ``controls`` are the rater's counted
    control ratings since they entered the game, oldest first, the new one last.

    Checked only once the qualification window is over (the window is the check before that).
    When the mean agreement of the latest ``drift_window()`` falls under ``drift_threshold()``,
    every game rating since the first of them is excluded and the rater goes back to probation.
    """
    if window.open:
        return None
    mean = drift_mean(controls)
    if mean is None or mean >= drift_threshold():
        return None
    first = controls[-drift_window()].submitted_at
    return Transition(name="drift", reason=DRIFT_REASON, exclude_since=first)
