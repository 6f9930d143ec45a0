"""One error body for every API error: ``{"error": {"code": str, "message": str, "details": ...}}``.

``code`` is stable and machine-readable (``not_authenticated``, ``permission_denied``,
``not_found``, ``invalid``, ``throttled``, ``too_early``, ...), ``message`` is for a person,
``details`` holds the per-field errors of an invalid request, the rows of a refused manifest,
or null. The game's refusals (``ratinggame.game.RatingRejected``) keep their own code and status.
"""

import logging

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404, HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions, serializers, status
from rest_framework.response import Response
from rest_framework.serializers import as_serializer_error
from rest_framework.views import exception_handler as drf_exception_handler
from rest_framework.views import set_rollback

from annotators.staff.services import ActionRefused
from ratinggame.game import RatingRejected
from ratinggame.unavailable import UNAVAILABLE_MESSAGE, database_unavailable, retry_later

log = logging.getLogger(__name__)


class Conflict(exceptions.APIException):
    """The request is valid but does not apply to the object as it is now."""

    status_code = status.HTTP_409_CONFLICT
    default_code = "conflict"
    default_detail = "This action does not apply to the object as it is now."


class PayloadTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "too_large"
    default_detail = "The request is too large."


class ErrorDetailSerializer(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()
    details = serializers.JSONField(allow_null=True)


class ErrorSerializer(serializers.Serializer):
    """The body of every error answer (for the schema)."""

    error = ErrorDetailSerializer()


def error_body(code: str, message: str, details: object = None) -> dict:
    return {"error": {"code": code, "message": message, "details": details}}


def error_response(code: str, message: str, status_code: int, details: object = None) -> Response:
    return Response(error_body(code, message, details), status=status_code)


def _first_message(detail: object) -> str:
    """The first error message in a DRF error structure, with the field it belongs to."""
    if isinstance(detail, dict):
        for field, value in detail.items():
            inner = _first_message(value)
            if inner:
                return inner if field in ("non_field_errors", "detail") else f"{field}: {inner}"
        return ""
    if isinstance(detail, list):
        return next((m for m in map(_first_message, detail) if m), "")
    return str(detail)


def _translated(exc: Exception) -> Exception:
    """Django and service exceptions as the DRF exceptions they mean."""
    if isinstance(exc, DjangoValidationError):
        return exceptions.ValidationError(as_serializer_error(exc))
    if isinstance(exc, ActionRefused):
        return Conflict(exc.message)
    if isinstance(exc, RequestDataTooBig):
        return PayloadTooLarge(str(exc) or PayloadTooLarge.default_detail)
    if isinstance(exc, SuspiciousOperation):
        return exceptions.ParseError(str(exc) or "The request is malformed.")
    return exc


def exception_handler(exc: Exception, context: dict) -> Response:
    """REST_FRAMEWORK["EXCEPTION_HANDLER"]: every exception of an API view becomes the error body."""
    if isinstance(exc, RatingRejected):
        return error_response(exc.code, exc.message, exc.status)
    if database_unavailable(exc):
        set_rollback()
        return retry_later(error_response("unavailable", UNAVAILABLE_MESSAGE, 503))
    exc = _translated(exc)
    response = drf_exception_handler(exc, context)
    if response is None:
        # Not an API error: a bug. Logged with its traceback (and the request id); the client
        # gets the same body shape, without internals.
        log.error("unhandled error in %s", context.get("view").__class__.__name__, exc_info=exc)
        set_rollback()
        return error_response("server_error", "Something went wrong on the server.", 500)
    if isinstance(exc, exceptions.ValidationError):
        message = _first_message(exc.detail) or "The request is not valid."
        response.data = error_body("invalid", message, exc.detail)
        return response
    if isinstance(exc, Http404):
        code, message = "not_found", "Not found."
    elif isinstance(exc, DjangoPermissionDenied):
        code, message = "permission_denied", "You do not have permission to perform this action."
    else:
        detail = getattr(exc, "detail", None)
        code = getattr(detail, "code", None) or getattr(exc, "default_code", "error")
        message = str(detail) if isinstance(detail, str) else _first_message(detail) or str(exc)
    details = {"retry_after_seconds": exc.wait} if isinstance(exc, exceptions.Throttled) else None
    response.data = error_body(code, message, details)
    return response


@csrf_exempt  # it changes nothing; a POST to a wrong address gets the JSON 404, not a CSRF page
def api_not_found(request: HttpRequest, path: str = "") -> JsonResponse:
    """Any /api/ address that no endpoint answers: the same error body, never an HTML page."""
    return JsonResponse(error_body("not_found", f"No API endpoint at {request.path}."), status=404)
