"""The REST API (Django REST Framework), mounted at /api/ by ratinggame.urls.

For annotators, the game (``game``: the same services as the HTML pages, so a script can play
the whole journey); for researchers, pairs, manifest uploads, ratings and exports
(``pairs``, ``ratings``, ``exports``); for admins, rater statistics and actions (``raters``).
The OpenAPI schema is at /api/schema/, its documentation pages at /api/docs/ and /api/redoc/.
Every error answers ``{"error": {"code", "message", "details"}}`` (``errors``).
"""
