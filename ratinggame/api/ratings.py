"""Ratings for researchers, read-only. Raters appear by user id, never by name."""

import django_filters
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import generics, serializers
from rest_framework.request import Request
from rest_framework.response import Response

from ratinggame.api.errors import ErrorSerializer
from ratinggame.api.filters import IdFilter, UtcIsoDateTimeFilter
from ratinggame.api.permissions import IsResearcher
from ratinggame.models import Assignment, Pool, Rating

TAG = "ratings"


class RatingSerializer(serializers.ModelSerializer):
    pair = serializers.IntegerField(source="pair_id", read_only=True)
    rater = serializers.IntegerField(source="rater_id", read_only=True, help_text="The rater's user id (pseudonymous).")
    seconds_spent = serializers.SerializerMethodField()

    class Meta:
        model = Rating
        fields = [
            "id",
            "pair",
            "rater",
            "stage",
            "value",
            "served_at",
            "submitted_at",
            "seconds_spent",
            "points",
            "reference",
            "excluded",
            "excluded_reason",
        ]
        read_only_fields = fields

    @extend_schema_field(OpenApiTypes.DOUBLE)
    def get_seconds_spent(self, rating: Rating) -> float:
        return rating.seconds_spent


class RatingFilter(django_filters.FilterSet):
    pair = IdFilter(field_name="pair_id")
    rater = IdFilter(field_name="rater_id")
    stage = django_filters.ChoiceFilter(choices=Pool.choices)
    excluded = django_filters.BooleanFilter()
    submitted_after = UtcIsoDateTimeFilter(field_name="submitted_at", lookup_expr="gte")
    submitted_before = UtcIsoDateTimeFilter(field_name="submitted_at", lookup_expr="lt")

    class Meta:
        model = Rating
        fields = ["pair", "rater", "stage", "excluded", "submitted_after", "submitted_before"]


def ratings_shown_to(user):
    """Every rating, but those of the pairs ``user`` is rating right now (SPEC 5)."""
    return Rating.objects.exclude(pair_id__in=Assignment.objects.pairs_held_by(user))


class RatingList(generics.ListAPIView):
    permission_classes = [IsResearcher]
    serializer_class = RatingSerializer
    filterset_class = RatingFilter
    ordering_fields = ["id", "submitted_at", "pair"]

    def get_queryset(self):
        return ratings_shown_to(self.request.user).order_by("id")

    @extend_schema(tags=[TAG])
    def get(self, request: Request, *args, **kwargs) -> Response:
        return super().get(request, *args, **kwargs)


class RatingDetail(generics.RetrieveAPIView):
    permission_classes = [IsResearcher]
    serializer_class = RatingSerializer

    def get_queryset(self):
        return ratings_shown_to(self.request.user)

    @extend_schema(tags=[TAG], responses={200: RatingSerializer, 404: ErrorSerializer})
    def get(self, request: Request, *args, **kwargs) -> Response:
        return super().get(request, *args, **kwargs)
