"""``GET /healthz``: is this web process able to serve? For load balancers and monitors.

Checks the database (``SELECT 1``) and the Celery broker: with CELERY_BROKER_URL set, a kombu
connection is opened (2 seconds at most); without one, tasks run inline and there is no broker
to check ("inline"). 200 with ``{"database": "ok", "broker": "ok"|"inline"}`` when all is well,
else 503 naming the part that failed ("error"); the reason goes to the log, not to the caller.
Rating does not need the broker, but a broken broker means new pairs wait for priming and
exports never start, which an operator wants to see.
"""

import logging

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe
from kombu import Connection

log = logging.getLogger(__name__)

BROKER_TIMEOUT_SECONDS = 2.0
OK, INLINE, ERROR = "ok", "inline", "error"


def database_status() -> str:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as error:  # noqa: BLE001 - any failure means "not healthy", and is logged
        log.warning("health check: the database does not answer: %s: %s", type(error).__name__, error)
        return ERROR
    return OK


def broker_status() -> str:
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return INLINE
    try:
        with Connection(settings.CELERY_BROKER_URL, connect_timeout=BROKER_TIMEOUT_SECONDS) as broker:
            # No retries: a health check answers now; the load balancer asks again.
            broker.ensure_connection(max_retries=0, timeout=BROKER_TIMEOUT_SECONDS)
    except Exception as error:  # noqa: BLE001 - any failure means "not healthy", and is logged
        log.warning("health check: the broker does not answer: %s: %s", type(error).__name__, error)
        return ERROR
    return OK


@never_cache
@require_safe  # GET, and HEAD for monitors that probe with it
def healthz(request: HttpRequest) -> JsonResponse:
    checks = {"database": database_status(), "broker": broker_status()}
    healthy = ERROR not in checks.values()
    return JsonResponse(checks, status=200 if healthy else 503)
