"""The study's progress for researchers' scripts: the figures of the progress page on /research/
(``scoring.progress.dashboard.study_progress``), as JSON."""

from dataclasses import asdict

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from ratinggame.api.errors import ErrorSerializer
from ratinggame.api.permissions import IsResearcher
from scoring.progress import estimate
from scoring.progress.dashboard import RATING_BUCKETS, study_progress

TAG = "progress"


class PairsByRatingsSerializer(serializers.Serializer):
    ratings = serializers.ChoiceField(
        choices=RATING_BUCKETS, help_text="Counted human ratings of the pairs in this row (the last row is a range)."
    )
    pairs = serializers.IntegerField(help_text="Game pairs with that many.")


class HourSerializer(serializers.Serializer):
    hour = serializers.DateTimeField(help_text="The hour's start (UTC).")
    counted = serializers.IntegerField(help_text="Game ratings submitted in the hour that count toward the dataset.")
    other = serializers.IntegerField(help_text="Other ratings submitted in the hour (tutorial, probation, excluded).")


class EstimateSerializer(serializers.Serializer):
    result = serializers.ChoiceField(
        choices=estimate.RESULTS,
        help_text="estimated; reached; no_pairs (the pool is empty); too_few_pairs (the pool cannot give the target); "
        "no_rate (no counted rating in the last day).",
    )
    missing = serializers.IntegerField(help_text="Validated pairs still needed to reach the target.")
    ratings_needed = serializers.IntegerField(
        allow_null=True, help_text="Counted game ratings still needed, about (null: the pool cannot give the target)."
    )
    hours = serializers.FloatField(allow_null=True, help_text="Hours to the target at the current rate.")
    reached_at = serializers.DateTimeField(allow_null=True, help_text="When the target is reached at that rate.")


class ProgressSerializer(serializers.Serializer):
    now = serializers.DateTimeField(help_text="When these figures were read.")
    target = serializers.IntegerField(help_text="Validated pairs the study aims for.")
    target_is_pool = serializers.BooleanField(help_text="True: no target is set, the target is every game pair.")
    game_pairs = serializers.IntegerField(help_text="Game pairs in the pool.")
    validated = serializers.IntegerField(help_text="Game pairs with at least the minimum of counted human ratings.")
    pairs_by_ratings = PairsByRatingsSerializer(many=True)
    priming_waiting = serializers.IntegerField(help_text="Game pairs whose model priming is pending or running.")
    priming_failed = serializers.IntegerField(help_text="Game pairs whose model priming failed.")
    kept_out = serializers.IntegerField(help_text="Game pairs out of play after reports, until staff answer.")
    raters_last_hour = serializers.IntegerField(
        help_text="The study's raters (never staff or withdrawn accounts) who rated in the last hour."
    )
    raters_last_day = serializers.IntegerField(help_text="The same over the last day.")
    rate_per_hour = serializers.FloatField(help_text="Counted game ratings an hour, from rate_since to now.")
    rate_since = serializers.DateTimeField(help_text="The start of the rate's window (a day, or the study's start).")
    past_minimum_share = serializers.FloatField(
        help_text="Share of the counted ratings so far that went to pairs already at the minimum."
    )
    hours = HourSerializer(many=True, help_text="Ratings per hour over the last week, oldest first.")
    estimate = EstimateSerializer()


class ProgressView(APIView):
    """How far the study is: validated pairs against the target, pairs by number of ratings,
    model priming, active raters, ratings per hour and when the target is reached at the
    current rate. The same figures as the progress section of /research/."""

    permission_classes = [IsResearcher]

    @extend_schema(tags=[TAG], responses={200: ProgressSerializer, 401: ErrorSerializer, 403: ErrorSerializer})
    def get(self, request: Request) -> Response:
        progress = study_progress()
        body = {
            **asdict(progress),
            "pairs_by_ratings": [{"ratings": k, "pairs": v} for k, v in progress.pairs_by_ratings.items()],
            "hours": [
                {"hour": hour, "counted": counted, "other": other} for hour, counted, other in progress.per_hour()
            ],
        }
        return Response(ProgressSerializer(body).data)
