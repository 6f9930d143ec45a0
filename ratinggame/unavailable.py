"""While the database does not answer: 503 with Retry-After, never a bare 500.

A PostgreSQL restart or outage surfaces as Django's OperationalError (cannot connect, the
server closed the connection) or InterfaceError (a connection already closed). Wherever it is
raised, in a view, a middleware (the session, the user) or a template, it ends in Django's
500 handler, ``server_error`` below (API views answer through ``ratinggame.api.errors``, which
asks ``database_unavailable`` too). Pages get the site's own 503 page, rendered without the
request so that rendering it touches no database; API addresses get the API's error body.
Both say when to try again (``Retry-After``); the site reconnects by itself (CONN_HEALTH_CHECKS).
"""

import sys

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string
from django.views import defaults

RETRY_AFTER_SECONDS = 30
UNAVAILABLE_MESSAGE = "The database is not answering right now; nothing was changed. Try again in a moment."
_API_PREFIX = "/api/"


def database_unavailable(error: BaseException | None) -> bool:
    return isinstance(error, OperationalError | InterfaceError)


def retry_later(response: HttpResponse) -> HttpResponse:
    """``response`` (a 503) with the time after which to try again."""
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


def unavailable_response(request: HttpRequest) -> HttpResponse:
    if request.path.startswith(_API_PREFIX):
        body = {"error": {"code": "unavailable", "message": UNAVAILABLE_MESSAGE, "details": None}}
        response = JsonResponse(body, status=503)
    else:
        response = HttpResponse(render_to_string("503.html"), status=503)
    return retry_later(response)


def server_error(request: HttpRequest) -> HttpResponse:
    """handler500: Django's 500 page, or the 503 answer when the error is the database's absence."""
    # Django calls the handler while it handles the exception: it is the one in flight.
    if database_unavailable(sys.exception()):
        return unavailable_response(request)
    return defaults.server_error(request)
