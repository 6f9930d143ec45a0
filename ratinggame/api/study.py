"""The study over JSON (SPEC 7): a participant's session (``GET study/session``: ended or not, the
code and the way back to their platform; ``POST study/session/finish``: end it when nothing is left
to rate) and, for researchers' scripts, the pay report
(``annotators.study.report``): ``GET study/pay?start=YYYY-MM-DD&end=YYYY-MM-DD`` as JSON, or
``&download=prolific`` / ``csv`` for the report's files."""

from dataclasses import asdict

from django.http import HttpResponse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotators.models import Participation
from annotators.study.completion import completion_code, may_rate_on, session_end_check
from annotators.study.entry import return_url
from annotators.study.pay_files import FILES
from annotators.study.report import PayPeriodError, pay_period, pay_report
from annotators.study.settings import study
from ratinggame import game
from ratinggame.api.errors import ErrorSerializer, error_response
from ratinggame.api.permissions import IsAnnotator, IsResearcher

TAG = "study"


class PayQuerySerializer(serializers.Serializer):
    start = serializers.DateField(help_text="The period's first day (UTC).")
    end = serializers.DateField(help_text="The period's last day (UTC), included.")
    # Not "format": DRF reads that one as the renderer to use.
    download = serializers.ChoiceField(
        choices=list(FILES),
        required=False,
        help_text="prolific: the bulk-bonus lines; adjustment: the adjustment's lines; csv: every column.",
    )

    def validate(self, data: dict) -> dict:
        try:
            data["period"] = pay_period(data["start"], data["end"])
        except PayPeriodError as error:
            raise serializers.ValidationError(str(error)) from None
        return data


class PayRowSerializer(serializers.Serializer):
    profile_id = serializers.IntegerField()
    username = serializers.CharField()
    platform = serializers.CharField(help_text="prolific, generic, mturk; empty for open sign-up.")
    participant_id = serializers.CharField(help_text="The platform's participant id (pseudonymous).")
    study_id = serializers.CharField()
    session_id = serializers.CharField()
    outcome = serializers.CharField(help_text="completed, screened_out, or empty while the session goes on.")
    withdrawn = serializers.BooleanField()
    active_seconds = serializers.FloatField(help_text="Serve to submit of each rating, capped per rating.")
    sessions = serializers.IntegerField()
    ratings = serializers.IntegerField(help_text="Ratings of every stage in the period.")
    counted = serializers.IntegerField(help_text="Game ratings not excluded.")
    excluded = serializers.IntegerField(help_text="Game ratings excluded (time paid, no points).")
    points = serializers.IntegerField(help_text="Game score last shown to the rater in the period.")
    base = serializers.DecimalField(max_digits=12, decimal_places=2)
    bonus = serializers.DecimalField(max_digits=12, decimal_places=2)
    amount = serializers.DecimalField(max_digits=12, decimal_places=2)


class PayReportSerializer(serializers.Serializer):
    start = serializers.DateTimeField()
    end = serializers.DateTimeField(help_text="Excluded: the start of the day after the last.")
    currency = serializers.CharField()
    hourly = serializers.DecimalField(max_digits=12, decimal_places=4)
    per_point = serializers.DecimalField(max_digits=12, decimal_places=4)
    minimum_hourly = serializers.DecimalField(max_digits=12, decimal_places=2)
    total = serializers.DecimalField(max_digits=14, decimal_places=2)
    median_session_seconds = serializers.FloatField(allow_null=True)
    median_pay_per_session = serializers.DecimalField(max_digits=12, decimal_places=2, allow_null=True)
    hourly_at_median = serializers.DecimalField(max_digits=12, decimal_places=2, allow_null=True)
    under_minimum = serializers.BooleanField()
    adjustment = serializers.DecimalField(
        max_digits=12,
        decimal_places=2,
        help_text="Paid to every platform participant on top when the pay at the median is under the minimum: "
        "it brings it to the minimum (0 otherwise). download=adjustment answers its lines.",
    )
    rows = PayRowSerializer(many=True)


class PayReportView(APIView):
    """Time on task and pay per rater for a period, with the median session and the pay per hour
    at the median; ``download=prolific`` answers Prolific's bulk-bonus lines, ``download=adjustment`` the
    adjustment's, ``download=csv`` every column."""

    permission_classes = [IsResearcher]

    @extend_schema(
        tags=[TAG],
        parameters=[PayQuerySerializer],
        responses={
            200: PayReportSerializer,
            (200, "text/csv"): OpenApiTypes.STR,
            400: ErrorSerializer,
            401: ErrorSerializer,
            403: ErrorSerializer,
        },
    )
    def get(self, request: Request) -> Response | HttpResponse:
        query = PayQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        start, end = query.validated_data["period"]
        report = pay_report(start=start, end=end)
        kind = query.validated_data.get("download")
        if kind in FILES:
            content_type, write = FILES[kind]
            return HttpResponse(write(report), content_type=f"{content_type}; charset=utf-8")
        body = {
            "start": report.start,
            "end": report.end,
            "currency": report.currency,
            "hourly": report.hourly,
            "per_point": report.per_point,
            "minimum_hourly": report.minimum_hourly,
            "total": report.total,
            **asdict(report.median),
            "rows": [{**asdict(row), "amount": row.amount} for row in report.rows],
        }
        return Response(PayReportSerializer(body).data)


class SessionSerializer(serializers.Serializer):
    participant = serializers.BooleanField(
        help_text="Whether the rater came through a platform link (only they have a quota)."
    )
    outcome = serializers.CharField(help_text="completed, screened_out, or empty while the session goes on.")
    code = serializers.CharField(help_text="The completion or screened-out code once the session ended.")
    return_url = serializers.CharField(help_text="Where to send the participant back to their platform, with the code.")
    may_rate_on = serializers.BooleanField()


class SessionView(APIView):
    """The caller's session in the study: whether it ended (the quota reached or screened out, checked
    now), its code and the platform's return address."""

    permission_classes = [IsAnnotator]

    @extend_schema(tags=[TAG], responses={200: SessionSerializer, 401: ErrorSerializer, 403: ErrorSerializer})
    def get(self, request: Request) -> Response:
        return Response(SessionSerializer(_session_body(request.user)).data)


class SessionFinishView(APIView):
    """End the caller's session with the completion code when no pair is left for them (``next``
    answered ``none_left``): paid for their time. A pair that has come free since stays open for
    them instead (409 ``pair_open``; ``POST game/next`` gives it), and the session goes on."""

    permission_classes = [IsAnnotator]

    @extend_schema(
        tags=[TAG],
        request=None,
        responses={200: SessionSerializer, 401: ErrorSerializer, 403: ErrorSerializer, 409: ErrorSerializer},
    )
    def post(self, request: Request) -> Response:
        if game.session_finish(rater=request.user) is not None:
            message = "A pair has come free to rate: POST /api/game/next gives it, and the session goes on."
            return error_response("pair_open", message, 409)
        return Response(SessionSerializer(_session_body(request.user)).data)


def _session_body(user) -> dict:
    participation = session_end_check(user=user, now=timezone.now())
    rules = study()
    code = completion_code(participation, rules) if participation is not None else ""
    return {
        "participant": Participation.objects.filter(profile__user=user).exists(),
        "outcome": participation.outcome if participation is not None else "",
        "code": code,
        "return_url": return_url(participation, code, rules) if code else "",
        "may_rate_on": may_rate_on(participation, rules),
    }
