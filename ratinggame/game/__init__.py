"""The game itself (SPEC sections 3 and 5): serving pairs, taking ratings, feedback.

The rating screens' services are in ``rating``; which game pair a rater gets next in
``assignment``; a pair's consensus aggregates in ``aggregates``. Callers use the names below.
"""

from ratinggame.game.rating import Feedback, RatingRejected, Served, feedback_for, pair_serve, rating_submit

__all__ = ["Feedback", "RatingRejected", "Served", "feedback_for", "pair_serve", "rating_submit"]
