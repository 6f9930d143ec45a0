"""The game itself (SPEC sections 3 and 5): serving pairs, taking ratings, feedback.

The rating screens' services are in ``rating`` (re-exported below); which game pair a rater
gets next in ``assignment``; a pair's consensus aggregates in ``aggregates``; reports and skips
in ``reports``; "delete my data" in ``withdrawal``; the next image to fetch ahead in ``prefetch``.
"""

from ratinggame.game.rating import Feedback, RatingRejected, Served, feedback_for, pair_serve, rating_submit

__all__ = ["Feedback", "RatingRejected", "Served", "feedback_for", "pair_serve", "rating_submit"]
