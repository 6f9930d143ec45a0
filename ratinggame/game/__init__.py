"""The game itself (SPEC sections 3 and 5): serving pairs, taking ratings, feedback.

The rating screens' services are in ``rating`` (re-exported below, with the neutral skip of
``skips``): each rating is a pure decision (``decision``: the points, the feedback, the writes and
any move out) that ``gameplay`` (the game) and ``rating`` (tutorial and probation) apply through
the one gateway of the rating path's statements (``gateway``, over the SQL of ``sql`` and
``prepared``); which game pair a rater gets next in ``assignment``, which control pair in
``controls``; the journey's decisions applied in ``transitions``; a pair's consensus aggregates
in ``aggregates``; reports of a problem in ``reports``; "delete my data" in ``withdrawal``; the
next image to fetch ahead in ``prefetch``; a study participant's "finish my session" in ``finish``.
"""

from ratinggame.game.finish import session_finish
from ratinggame.game.rating import Feedback, RatingRejected, Served, feedback_for, pair_serve, rating_submit
from ratinggame.game.results import SAME_PAIR_AGAIN, SESSION_ENDED
from ratinggame.game.skips import Skipped, pair_skip

__all__ = [
    "SAME_PAIR_AGAIN",
    "SESSION_ENDED",
    "Feedback",
    "RatingRejected",
    "Served",
    "Skipped",
    "feedback_for",
    "pair_serve",
    "pair_skip",
    "rating_submit",
    "session_finish",
]
