"""Request ids and structured request logs.

``RequestIdMiddleware`` gives every request an id: a sane incoming ``X-Request-ID`` (set by a
load balancer or a client, so one id follows a request across tiers) or a new uuid4. The id
is returned in the response's ``X-Request-ID``, put on every log record written while the
request runs (``RequestIdFilter``), and one line is logged per request with its method, path,
status, duration and user id. ``JsonFormatter`` writes records as JSON lines
(``DJANGO_LOG_FORMAT=json``) for a log collector.
"""

import json
import logging
import re
import time
import uuid
from contextvars import ContextVar
from datetime import UTC, datetime

from django.http import HttpRequest, HttpResponse

HEADER = "X-Request-ID"
META_KEY = "HTTP_X_REQUEST_ID"  # the header as WSGI names it
# Letters, digits and -_.: only, up to 128 characters: anything else (spaces, newlines that
# could forge log lines, very long values) is replaced by a fresh id.
_SANE = re.compile(r"[A-Za-z0-9._:-]{1,128}")
NO_REQUEST = "-"

request_id_var: ContextVar[str] = ContextVar("request_id", default=NO_REQUEST)
log = logging.getLogger("ratinggame.request")


def request_id_from(incoming: str | None) -> str:
    """The incoming id when it is sane, else a new uuid4 (hex)."""
    if incoming and _SANE.fullmatch(incoming):
        return incoming
    return uuid.uuid4().hex


class RequestIdMiddleware:
    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        # From META: ``request.headers`` would build a mapping of every header to read this one.
        request_id = request_id_from(request.META.get(META_KEY))
        request.request_id = request_id
        token = request_id_var.set(request_id)
        started = time.perf_counter()
        try:
            response = self.get_response(request)
            response[HEADER] = request_id
            duration_ms = round((time.perf_counter() - started) * 1000, 1)
            user = getattr(request, "user", None)
            user_id = user.pk if user is not None and user.is_authenticated else None
            level = logging.ERROR if response.status_code >= 500 else logging.INFO
            log.log(
                level,
                "%s %s %s %.1fms",
                request.method,
                request.path,
                response.status_code,
                duration_ms,
                extra={
                    "method": request.method,
                    "path": request.path,
                    "status": response.status_code,
                    "duration_ms": duration_ms,
                    "user_id": user_id,
                },
            )
            return response
        finally:
            request_id_var.reset(token)


class RequestIdFilter(logging.Filter):
    """Adds ``record.request_id``: the id of the request being served, or "-" outside one."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id_var.get()
        return True


# Extra fields the request log line carries, copied into the JSON object when present.
_EXTRA_FIELDS = ("method", "path", "status", "duration_ms", "user_id")


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message, request_id and request fields."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", request_id_var.get()),
        }
        for name in _EXTRA_FIELDS:
            if hasattr(record, name):
                entry[name] = getattr(record, name)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)
