"""What the rating services answer: a pair served, a rating's feedback, a refusal; and the checks
every stage shares. The services are ``ratinggame.game.rating`` (every stage) and
``ratinggame.game.gameplay`` (the game stage's hot path)."""

from dataclasses import dataclass, field
from datetime import datetime

from annotators import journey
from annotators.journey import Step, Window
from annotators.models import SessionOutcome
from ratinggame.models import SERVED_IN_GAME, Pool


@dataclass(frozen=True)
class Served:
    assignment_id: int
    pair_id: int
    stage: str  # "tutorial" | "probation" | "game"
    image_url: str
    image_width: int
    image_height: int
    caption: str
    served_at: datetime
    min_submit_at: datetime  # served_at + journey.min_seconds(stage)
    expires_at: datetime
    position: int | None  # 1-based place in the tutorial / probation round; None in the game
    total: int | None  # pairs in the tutorial / probation round; None in the game
    # The pair's image (an Image or an ImageRow: its file name, size and display copies), for
    # pages; the API sends only the fields above.
    image: object = field(default=None, compare=False, repr=False)
    # The game: whether "Skip this pair" is open for this pair, and if not, the game pair number
    # from which it is (None: skipping is off); the rating screen shows the button or says when.
    skip_open: bool = field(default=False, compare=False, repr=False)
    skip_from: int | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Feedback:
    assignment_id: int
    pair_id: int
    stage: str
    value: int
    points: int
    reference: int | None  # expert rating (tutorial/probation) or consensus shown (game); None: first rater
    explanation: str  # expert explanation (tutorial/probation), "" in the game
    first_rater: bool  # game: no rating before this one -> 0 points
    stage_total: int  # tutorial total / probation round total / game score, after this rating
    stage_max: int | None  # 2 * pairs in the tutorial / round; None in the game
    window: Window | None  # game only
    # tutorial_passed|tutorial_failed|probation_passed|probation_failed|window_passed|window_failed|drift
    transition: str | None
    level: int
    rating_id: int
    next: Served | None = None  # the rater's next pair, when the submission asked for it (serve_next)
    # The submission repeated one already stored (a double click, another tab): this is the stored
    # rating's feedback, and the value sent this time was not taken.
    already_rated: bool = False
    # This rating ended the rater's study session (SPEC 7): nothing was served after it, and the
    # completion page comes next.
    session_ended: bool = False
    # A study participant's session after this rating (``annotators.study.completion.SessionProgress``),
    # for the next pair's screen; None for other raters.
    session_progress: object = None
    # A study's attention check (SPEC 7): ``reference`` is the answer its caption asked for, and
    # the rating is in no score.
    attention_check: bool = False


# Refusals that leave the pair open: the rating screen shows it again with the reason and the choice.
SAME_PAIR_AGAIN = frozenset({"too_early", "invalid_value"})
# The refusal once a study session has ended (SPEC 7): the pages open the completion page.
SESSION_ENDED = "session_ended"


class RatingRejected(Exception):
    """A serve or submission the rules refuse; ``status`` is the HTTP status to answer with."""

    def __init__(self, code: str, message: str, status: int) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status


def session_closed(outcome: str) -> RatingRejected:
    """A serve, rating or skip once the rater's study session has ended (SPEC 7)."""
    if outcome == SessionOutcome.SCREENED_OUT:
        message = "This study has ended for you: your probation rounds did not reach the pass mark."
    else:
        message = "Your session in this study is complete: thank you."
    return RatingRejected(SESSION_ENDED, f"{message} Your code is on the completion page.", 403)


def shown_stage(stage: str) -> str:
    """The stage a rater is shown for an assignment or rating of ``stage``: a control is a game pair
    to them, and a study's attention check is served on the game screen."""
    return Pool.GAME.value if stage in SERVED_IN_GAME else Pool(stage).value


def feedback_shown(
    *,
    rating_id: int,
    assignment_id: int,
    pair_id: int,
    stage: str,
    value: int,
    points: int,
    reference: int | None,
    shown: dict,
    explanation: str = "",
) -> Feedback:
    """The feedback of a stored rating, from what it recorded the rater was shown (``Rating.feedback``)."""
    window = shown.get("window")
    return Feedback(
        assignment_id=assignment_id,
        pair_id=pair_id,
        stage=shown_stage(stage),
        value=value,
        points=points,
        reference=reference,
        explanation="" if stage in SERVED_IN_GAME else explanation,
        first_rater=bool(shown.get("first_rater", False)),
        attention_check=bool(shown.get("attention", False)),
        stage_total=shown.get("stage_total", 0),
        stage_max=shown.get("stage_max"),
        window=Window(count=window[0], points=window[1]) if window else None,
        transition=shown.get("transition"),
        level=shown.get("level", 1),
        rating_id=rating_id,
    )


def check_may_rate(step: Step) -> None:
    if step == Step.SUSPENDED:
        raise RatingRejected("suspended", "Your account is suspended: you cannot rate pairs for now.", 403)
    if step == Step.CONSENT:
        raise RatingRejected("no_consent", "Please read and accept the consent form before rating.", 403)


def not_found(action: str = "rate") -> RatingRejected:
    return RatingRejected("not_found", f"There is no such pair to {action}.", 404)


def not_yours() -> RatingRejected:
    return RatingRejected("not_yours", "This pair was served to someone else.", 403)


def expired() -> RatingRejected:
    return RatingRejected("expired", "This pair is no longer open for rating. Please rate the next one.", 400)


def too_early(stage: str) -> RatingRejected:
    seconds = journey.min_seconds(stage)
    return RatingRejected("too_early", f"Take at least {seconds:g} seconds to look at the pair before rating it.", 400)


def wrong_stage(stage: str, step: str) -> RatingRejected:
    return RatingRejected(
        "wrong_stage", f"This pair belongs to the {shown_stage(stage)}, and you are now in the {step}.", 403
    )


_VALUE_TEXT = {"1": 1, "2": 2, "3": 3, "4": 4, "5": 5}


def clean_value(value: object) -> int:
    # bool is an int subclass (True == 1) and "3.5" or 3.0 are not ratings on a 5-level scale.
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 5:
        return value
    if isinstance(value, str) and value in _VALUE_TEXT:
        return _VALUE_TEXT[value]
    raise RatingRejected("invalid_value", "Choose a rating from 1 to 5.", 400)


# The largest id an assignment can have (a 64-bit primary key): larger ones name nothing, and the
# game's prepared statements must not send them to the database (which would refuse the number).
MAX_ID = 2**63 - 1


def clean_assignment_id(assignment_id: object) -> int:
    if isinstance(assignment_id, bool) or not isinstance(assignment_id, int) or not 0 < assignment_id <= MAX_ID:
        raise not_found()
    return assignment_id
