"""Rater statistics and actions for admins: the staff dashboard's data and actions, over JSON.

Statistics and flags come from ``annotators.competency.flags.rater_statistics`` with the competency of
the latest finished PCM analysis; actions go through ``annotators.staff.services``, which
applies them under row locks and writes the audit log (``RaterAction``: who, what, why, from
and to which state), listed at ``admin/actions``.
"""

import django_filters
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import generics, serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotators.competency.flag_rules import FLAG_KEYS
from annotators.competency.flags import rater_statistics
from annotators.competency.jobs import latest_analysis
from annotators.models import Participation, RaterAction, RaterProfile, RaterState
from annotators.staff import services as staff_services
from ratinggame.api.errors import ErrorSerializer
from ratinggame.api.filters import IdFilter
from ratinggame.api.permissions import IsAdminRole

TAG = "admin"

ACTIONS = {
    "suspend": staff_services.rater_suspend,
    "reinstate": staff_services.rater_reinstate,
    "probation": staff_services.rater_send_to_probation,
}


class RaterStatsSerializer(serializers.Serializer):
    """One rater: state, scores, agreement, speed and behaviour flags (rates are 0..1, null without data)."""

    profile_id = serializers.IntegerField()
    user_id = serializers.IntegerField()
    username = serializers.CharField()
    state = serializers.ChoiceField(choices=RaterState.choices)
    tutorial_score = serializers.IntegerField(allow_null=True)
    probation_rounds = serializers.IntegerField()
    game_score = serializers.IntegerField()
    ratings = serializers.IntegerField()
    game_ratings = serializers.IntegerField()
    rated_with_reference = serializers.IntegerField()
    exact_rate = serializers.FloatField(allow_null=True)
    adjacent_rate = serializers.FloatField(allow_null=True)
    lack_rate = serializers.FloatField(allow_null=True)
    mean_abs_deviation = serializers.FloatField(allow_null=True)
    median_seconds = serializers.FloatField(allow_null=True)
    near_floor_share = serializers.FloatField(allow_null=True)
    longest_run = serializers.IntegerField()
    modal_share = serializers.FloatField(allow_null=True)
    primed_ratings = serializers.IntegerField()
    prime_equal_share = serializers.FloatField(allow_null=True)
    open_disputes = serializers.IntegerField()
    control_ratings = serializers.IntegerField(help_text="Ratings of control pairs (expert-rated, hidden in the game).")
    control_agreement = serializers.FloatField(
        allow_null=True, help_text="Their mean agreement with the experts: exact 2, one level off 1, otherwise 0."
    )
    control_recent = serializers.IntegerField(help_text="The latest control ratings the drift rule reads.")
    control_recent_agreement = serializers.FloatField(allow_null=True, help_text="Their mean agreement (0..2).")
    game_serves = serializers.IntegerField()
    skips = serializers.IntegerField(help_text='Game pairs passed with "Skip this pair".')
    platform = serializers.CharField(help_text="The platform the rater came from by its link; empty: sign-up here.")
    participant_id = serializers.CharField(
        help_text="Their pseudonymous id on that platform (empty once they withdrew: kept in the pay report only)."
    )
    flags = serializers.ListField(child=serializers.ChoiceField(choices=FLAG_KEYS))
    competency = serializers.FloatField(allow_null=True, help_text="Latest PCM ability, in logits.")
    competency_se = serializers.FloatField(allow_null=True, help_text="Its standard error.")
    competency_converged = serializers.BooleanField(
        allow_null=True, help_text="Whether that PCM fit converged (false: the competency is not an estimate to read)."
    )
    rater_quality = serializers.FloatField(
        allow_null=True, help_text="Dawid-Skene expected accuracy (0..1) on game ratings, from the same analysis."
    )


class RaterActionSerializer(serializers.ModelSerializer):
    rater = serializers.IntegerField(source="rater_id", read_only=True, help_text="Rater profile id.")
    actor = serializers.IntegerField(source="actor_id", read_only=True, allow_null=True, help_text="Staff user id.")

    class Meta:
        model = RaterAction
        fields = ["id", "rater", "actor", "action", "reason", "from_state", "to_state", "created_at"]
        read_only_fields = fields


class ReasonSerializer(serializers.Serializer):
    reason = serializers.CharField(max_length=2000, help_text="Why: kept in the audit log.")


def _stats_rows(profile_ids: list[int] | None = None) -> list[dict]:
    analysis = latest_analysis()
    abilities = analysis.abilities if analysis is not None else {}
    quality = analysis.rater_quality if analysis is not None else {}
    converged = analysis.details.get("converged") if analysis is not None else None
    # A withdrawn rater's external id stays in the pay report only.
    came = Participation.objects.filter(profile__withdrawn_at__isnull=True)
    if profile_ids is not None:
        came = came.filter(profile_id__in=profile_ids)
    platforms = {p.profile_id: (p.platform, p.external_id) for p in came}
    rows = []
    for stats in rater_statistics(profile_ids):
        platform, participant_id = platforms.get(stats.profile_id, ("", ""))
        ability, se = (abilities.get(str(stats.profile_id)) or [None, None])[:2]
        row = {name: getattr(stats, name) for name in RaterStatsSerializer().fields if hasattr(stats, name)}
        extra = {
            "competency_converged": converged,
            "rater_quality": quality.get(str(stats.profile_id)),
            "platform": platform,
            "participant_id": participant_id,
        }
        rows.append({**row, "competency": ability, "competency_se": se, **extra})
    return rows


class RaterList(generics.GenericAPIView):
    permission_classes = [IsAdminRole]
    serializer_class = RaterStatsSerializer
    filter_backends: list = []  # filtered below: the statistics are computed, not a queryset

    @extend_schema(
        tags=[TAG],
        parameters=[
            OpenApiParameter("state", str, enum=RaterState.values, description="Only raters in this state."),
            OpenApiParameter("flag", str, enum=list(FLAG_KEYS), description="Only raters with this flag."),
            OpenApiParameter("q", str, description="Username contains (case-insensitive)."),
        ],
        responses={200: RaterStatsSerializer(many=True), 400: ErrorSerializer},
    )
    def get(self, request: Request) -> Response:
        state, flag = request.query_params.get("state", ""), request.query_params.get("flag", "")
        query = request.query_params.get("q", "").strip().lower()
        if state and state not in RaterState.values:
            raise serializers.ValidationError({"state": [f"Choose one of {', '.join(RaterState.values)}."]})
        if flag and flag not in FLAG_KEYS:
            raise serializers.ValidationError({"flag": [f"Choose one of {', '.join(FLAG_KEYS)}."]})
        rows = [
            row
            for row in _stats_rows()
            if (not state or row["state"] == state)
            and (not flag or flag in row["flags"])
            and (not query or query in row["username"].lower())
        ]
        page = self.paginate_queryset(rows)
        return self.get_paginated_response(RaterStatsSerializer(page, many=True).data)


class RaterDetail(APIView):
    permission_classes = [IsAdminRole]

    @extend_schema(tags=[TAG], responses={200: RaterStatsSerializer, 404: ErrorSerializer})
    def get(self, request: Request, profile_id: int) -> Response:
        profile = get_object_or_404(RaterProfile, pk=profile_id)
        return Response(RaterStatsSerializer(_stats_rows([profile.pk])[0]).data)


class RaterActionView(APIView):
    """Suspend, reinstate or send a rater back to probation, with a reason (logged)."""

    permission_classes = [IsAdminRole]
    rater_action = ""  # a key of ACTIONS, set in the URL conf

    @extend_schema(
        tags=[TAG],
        request=ReasonSerializer,
        responses={
            200: RaterActionSerializer,
            400: ErrorSerializer,
            404: ErrorSerializer,
            409: OpenApiResponse(ErrorSerializer, description="The action does not apply to the rater's state."),
        },
    )
    def post(self, request: Request, profile_id: int) -> Response:
        profile = get_object_or_404(RaterProfile, pk=profile_id)
        serializer = ReasonSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        # ActionRefused (e.g. already suspended) -> 409 through the error handler.
        record = ACTIONS[self.rater_action](
            profile=profile, actor=request.user, reason=serializer.validated_data["reason"]
        )
        return Response(RaterActionSerializer(record).data)


class ActionFilter(django_filters.FilterSet):
    rater = IdFilter(field_name="rater_id", help_text="Rater profile id.")
    actor = IdFilter(field_name="actor_id")
    action = django_filters.CharFilter()

    class Meta:
        model = RaterAction
        fields = ["rater", "actor", "action"]


class ActionLog(generics.ListAPIView):
    """The audit log of staff actions on raters, newest first."""

    permission_classes = [IsAdminRole]
    serializer_class = RaterActionSerializer
    queryset = RaterAction.objects.order_by("-created_at", "-id")
    filterset_class = ActionFilter

    @extend_schema(tags=[TAG])
    def get(self, request: Request, *args, **kwargs) -> Response:
        return super().get(request, *args, **kwargs)
