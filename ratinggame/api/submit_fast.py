"""``POST /api/game/submit`` on its hot path: plain code, not DRF's request handling.

A rating (and the next pair) is the product's unit of work, and DRF's handling of it (request
wrapping, content negotiation, authentication classes, serializers) cost more CPU than the
database work itself. This path reads the rater (token or session, user, roles, profile, locked)
in the first query of the rating's transaction (``ratinggame.game.signed_in``) and answers the
JSON the serializers of ``ratinggame.api.game`` define (a test compares the two answers field by
field), with the same checks in the same order: authentication, the annotator role, the user
throttle, CSRF for a browser session (as DRF's ``SessionAuthentication`` enforces it), the
body's fields, then the game's own rules.

Anything not plainly a well-formed rating by a rater this path can read (another content type,
a malformed body, an unknown token, a missing role, a CSRF failure, a throttled rater) goes to
the DRF view unchanged, which answers it as it always did: the fast path never decides a refusal
of its own (tests in ``tests/ratinggame/test_play_submit.py`` hold the two answers equal, case
for case).
"""

import json
from types import SimpleNamespace

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, JsonResponse
from django.utils import timezone
from rest_framework.authentication import CSRFCheck

from annotators.roles import is_annotator
from ratinggame import game
from ratinggame.api.errors import error_body
from ratinggame.game.signed_in import rater_by_session, rater_by_token
from ratinggame.unavailable import UNAVAILABLE_MESSAGE, database_unavailable, retry_later


class _ToDrf(Exception):
    """This request is for DRF's full handling (nothing was changed)."""


def submit(request: HttpRequest, view) -> JsonResponse | None:
    """The answer of a rating submission, or None: DRF's view answers this request."""
    if request.method != "POST" or request.content_type != "application/json":
        return None
    try:
        # NaN and Infinity are not JSON (DRF's parser refuses them): DRF answers those bodies.
        data = json.loads(request.body, parse_constant=_not_json)
    except (ValueError, RecursionError, RequestDataTooBig):
        return None
    if not isinstance(data, dict):
        return None
    assignment_id, serve_next = data.get("assignment_id"), data.get("next", False)
    if isinstance(assignment_id, bool) or not isinstance(assignment_id, int) or not isinstance(serve_next, bool):
        return None
    now = timezone.now()
    read = _reader(request, now)
    if read is None:
        return None

    def locked_rater():
        found = read()
        if found is None or not is_annotator(found.user):
            raise _ToDrf
        request.user = found.user  # the request log's, without reading it again
        if not _throttles_allow(request, view):
            raise _ToDrf
        return found.user, found.profile

    try:
        feedback = game.rating_submit(
            rater=None,
            assignment_id=assignment_id,
            value=data.get("value"),
            now=now,
            serve_next=serve_next,
            locked_rater=locked_rater,
        )
    except _ToDrf:
        return None
    except game.RatingRejected as rejected:
        return JsonResponse(error_body(rejected.code, rejected.message), status=rejected.status)
    except Exception as error:
        if not database_unavailable(error):
            raise
        return retry_later(JsonResponse(error_body("unavailable", UNAVAILABLE_MESSAGE), status=503))
    return JsonResponse(feedback_answer(feedback, serve_next=serve_next))


def _not_json(constant: str):
    raise ValueError(f"{constant} is not JSON")


def _reader(request: HttpRequest, now):
    """What reads the rater in the rating's transaction: by the token, or by the browser session
    (CSRF-checked first, as DRF does for session requests); None for DRF's handling."""
    header = request.META.get("HTTP_AUTHORIZATION", "")
    if header:
        parts = header.split()
        if len(parts) != 2 or parts[0].lower() != "token":
            return None
        return lambda: rater_by_token(parts[1])
    session_key = request.COOKIES.get(settings.SESSION_COOKIE_NAME)
    if not session_key:
        return None
    check = CSRFCheck(lambda _request: None)
    check.process_request(request)
    if check.process_view(request, None, (), {}) is not None:
        return None
    return lambda: rater_by_session(session_key, now)


def _throttles_allow(request: HttpRequest, view) -> bool:
    """Whether the view's throttles (REST_FRAMEWORK's) let this request through, each asked as DRF's
    ``check_throttles`` asks it. A refused request goes to DRF, which asks again and answers 429:
    a throttle that refuses records nothing, and for a signed-in rater only the user throttle
    counts (the anonymous one has no key for them), so no request is counted twice."""
    seen = SimpleNamespace(user=request.user, META=request.META, _request=request)
    return all([throttle.allow_request(seen, view) for throttle in view.get_throttles()])


# --- The answer: SubmittedSerializer's fields (ratinggame.api.game), written out ------------------


def _time(value) -> str:
    """As DRF's DateTimeField writes it: ISO 8601 in the current time zone, UTC as "Z"."""
    text = timezone.localtime(value).isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def served_answer(served: "game.Served") -> dict:
    return {
        "assignment_id": served.assignment_id,
        "stage": served.stage,
        "image_url": served.image_url,
        "image_width": served.image_width,
        "image_height": served.image_height,
        "caption": served.caption,
        "served_at": _time(served.served_at),
        "min_submit_at": _time(served.min_submit_at),
        "expires_at": _time(served.expires_at),
        "position": served.position,
        "total": served.total,
    }


def feedback_answer(feedback: "game.Feedback", *, serve_next: bool) -> dict:
    window = feedback.window
    answer = {
        "assignment_id": feedback.assignment_id,
        "stage": feedback.stage,
        "value": feedback.value,
        "points": feedback.points,
        "reference": feedback.reference,
        "explanation": feedback.explanation,
        "first_rater": feedback.first_rater,
        "stage_total": feedback.stage_total,
        "stage_max": feedback.stage_max,
        "window": None
        if window is None
        else {"count": window.count, "points": window.points, "size": window.size, "needed": window.needed},
        "transition": feedback.transition,
        "level": feedback.level,
        "rating_id": feedback.rating_id,
        "attention_check": feedback.attention_check,
        "already_rated": feedback.already_rated,
        "session_ended": feedback.session_ended,
    }
    if serve_next:
        answer["next"] = None if feedback.next is None else served_answer(feedback.next)
    return answer
