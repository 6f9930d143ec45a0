"""Caption pairs for researchers: list (filtered), detail, and a manifest upload with images.

Researchers see what annotators never see before rating: the human aggregates, the consensus
and the model primes.

A manifest upload is an import job (``ratinggame.pairs.jobs``): a small one runs within the
request, which answers as the command would (201 with the report, or 400 naming every bad
row); a large one runs on a worker, and the request answers 202 with the job to follow at
``GET /api/imports/{id}/``.
"""

import contextlib

import django_filters
from django.conf import settings
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import generics, serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from ratinggame.api.errors import ErrorSerializer, PayloadTooLarge, error_response
from ratinggame.api.filters import CountFilter
from ratinggame.api.permissions import IsResearcher
from ratinggame.game.aggregates import in_force
from ratinggame.models import Assignment, CaptionPair, CaptionSource, Image, ImportJob, Pool, PrimingStatus
from ratinggame.pairs.importing import ManifestError
from ratinggame.pairs.jobs import JOBS, import_job_read, import_job_start
from ratinggame.pairs.validation import PairInvalid
from ratinggame.unavailable import retry_later
from scoring.consensus import consensus_from_aggregates

TAG = "pairs"


class ImageSerializer(serializers.ModelSerializer):
    url = serializers.SerializerMethodField()

    class Meta:
        model = Image
        fields = ["id", "url", "width", "height", "sha256", "original_name", "source"]

    @extend_schema_field(OpenApiTypes.STR)
    def get_url(self, image: Image) -> str:
        return image.file.url


class PairSerializer(serializers.ModelSerializer):
    image = ImageSerializer(read_only=True)
    human_mean = serializers.SerializerMethodField(help_text="Mean of the counted human game ratings.")
    human_consensus = serializers.SerializerMethodField(
        help_text="The counted human game ratings' mean rounded half up (2.5 gives 3), as the game's consensus."
    )
    consensus_in_force = serializers.SerializerMethodField(
        help_text="What the next rater is scored against: human ratings plus the model primes still in place."
    )

    class Meta:
        model = CaptionPair
        fields = [
            "id",
            "image",
            "caption",
            "source",
            "pool",
            "references",
            "expert_rating",
            "explanation",
            "display_order",
            "human_count",
            "human_mean",
            "human_consensus",
            "consensus_in_force",
            "primes",
            "priming_status",
            "created_at",
        ]
        read_only_fields = fields

    @extend_schema_field(OpenApiTypes.DOUBLE)
    def get_human_mean(self, pair: CaptionPair) -> float | None:
        return pair.human_sum / pair.human_count if pair.human_count else None

    @extend_schema_field(OpenApiTypes.INT)
    def get_human_consensus(self, pair: CaptionPair) -> int | None:
        return consensus_from_aggregates(pair.human_count, pair.human_sum)

    @extend_schema_field(OpenApiTypes.INT)
    def get_consensus_in_force(self, pair: CaptionPair) -> int | None:
        aggregates = in_force(pair)
        return consensus_from_aggregates(aggregates.count, aggregates.total)


class PairFilter(django_filters.FilterSet):
    pool = django_filters.ChoiceFilter(choices=Pool.choices)
    source = django_filters.ChoiceFilter(choices=CaptionSource.choices)
    min_ratings = CountFilter(
        field_name="human_count", lookup_expr="gte", help_text="At least this many counted human ratings."
    )
    max_ratings = CountFilter(
        field_name="human_count", lookup_expr="lte", help_text="At most this many counted human ratings."
    )
    primed = django_filters.BooleanFilter(method="filter_primed", help_text="true: model priming is done.")
    priming_status = django_filters.ChoiceFilter(choices=PrimingStatus.choices)

    class Meta:
        model = CaptionPair
        fields = ["pool", "source", "min_ratings", "max_ratings", "primed", "priming_status"]

    def filter_primed(self, queryset, name: str, value: bool | None):
        if value is None:
            return queryset
        done = {"priming_status": PrimingStatus.DONE}
        return queryset.filter(**done) if value else queryset.exclude(**done)


def pairs_shown_to(user):
    """Every pair, but those ``user`` is rating right now (SPEC 5: not their consensus nor primes)."""
    return CaptionPair.objects.exclude(pk__in=Assignment.objects.pairs_held_by(user))


class PairList(generics.ListAPIView):
    permission_classes = [IsResearcher]
    serializer_class = PairSerializer
    filterset_class = PairFilter
    ordering_fields = ["id", "created_at", "human_count", "display_order"]

    def get_queryset(self):
        return pairs_shown_to(self.request.user).select_related("image").order_by("id")

    @extend_schema(tags=[TAG])
    def get(self, request: Request, *args, **kwargs) -> Response:
        return super().get(request, *args, **kwargs)


class PairDetail(generics.RetrieveAPIView):
    """404 while the caller holds an open assignment for the pair (rate it first)."""

    permission_classes = [IsResearcher]
    serializer_class = PairSerializer

    def get_queryset(self):
        return pairs_shown_to(self.request.user).select_related("image")

    @extend_schema(tags=[TAG], responses={200: PairSerializer, 404: ErrorSerializer})
    def get(self, request: Request, *args, **kwargs) -> Response:
        return super().get(request, *args, **kwargs)


# --- Manifest upload --------------------------------------------------------------------------


class ManifestUploadSerializer(serializers.Serializer):
    manifest = serializers.FileField(help_text="CSV or JSONL manifest (the columns of manage.py import_pairs).")
    images = serializers.ListField(
        child=serializers.FileField(),
        required=False,
        default=list,
        help_text="Image files named by the manifest's image column, and/or .zip files of them "
        "(paths inside a zip are the names the manifest uses).",
    )
    pool = serializers.ChoiceField(choices=Pool.choices, default=Pool.GAME, help_text="For rows without a pool.")
    dry_run = serializers.BooleanField(default=False, help_text="Check everything, write nothing.")
    skip_invalid = serializers.BooleanField(default=False, help_text="Import the good rows, report the others.")


class ImportReportSerializer(serializers.Serializer):
    rows = serializers.IntegerField()
    valid_rows = serializers.IntegerField()
    pairs_created = serializers.IntegerField()
    images_created = serializers.IntegerField()
    images_reused = serializers.IntegerField()
    pair_ids = serializers.ListField(child=serializers.IntegerField(), help_text="In manifest row order.")
    priming_note = serializers.CharField(
        allow_blank=True, help_text="Why the new game pairs wait for model priming, and how to start it; empty: queued."
    )
    dry_run = serializers.BooleanField()
    written = serializers.BooleanField()
    job_url = serializers.CharField(help_text="The import job, with the rows skipped (skip_invalid).")


class RowErrorSerializer(serializers.Serializer):
    row = serializers.IntegerField(help_text="Line number in the manifest (the CSV header is line 1).")
    reason = serializers.CharField()


class ImportJobSerializer(serializers.ModelSerializer):
    url = serializers.SerializerMethodField()
    rows = RowErrorSerializer(source="row_errors", many=True, help_text="The rows refused (or skipped).")

    class Meta:
        model = ImportJob
        fields = [
            "id",
            "url",
            "status",
            "progress",
            "progress_message",
            "error",
            "params",
            "report",
            "rows",
            "created_at",
            "started_at",
            "finished_at",
        ]
        read_only_fields = fields

    @extend_schema_field(OpenApiTypes.STR)
    def get_url(self, job: ImportJob) -> str:
        return reverse("api_import", args=[job.pk])


def import_job_answer(job: ImportJob) -> Response:
    """A finished job as the command would answer it; one still to run as 202 with its address."""
    url = reverse("api_import", args=[job.pk])
    if job.status == ImportJob.Status.DONE:
        body = ImportReportSerializer({**job.report, "job_url": url}).data
        return Response(body, status=status.HTTP_200_OK if job.report["dry_run"] else status.HTTP_201_CREATED)
    if JOBS.never_queued(job):  # the broker did not answer
        return retry_later(error_response("unavailable", job.error, 503, {"job_url": url}))
    if job.status == ImportJob.Status.FAILED:
        return error_response("invalid_manifest", job.error, 400, {"rows": job.row_errors, "job_url": url})
    return Response(ImportJobSerializer(job).data, status=status.HTTP_202_ACCEPTED, headers={"Location": url})


class ManifestUpload(APIView):
    """One bad row and nothing is written, the 400 naming every bad row (with ``skip_invalid``,
    the good rows are imported and the bad ones named). A manifest of more rows than the site
    imports within a request (a setting, 1,000 by default; docs/operators/configuration.md explains it) is imported
    by a worker: 202 and the job's address."""

    permission_classes = [IsResearcher]
    parser_classes = [MultiPartParser]

    @extend_schema(
        tags=[TAG],
        request={"multipart/form-data": ManifestUploadSerializer},
        responses={
            200: OpenApiResponse(ImportReportSerializer, description="dry_run: everything checked, nothing written"),
            201: ImportReportSerializer,
            202: OpenApiResponse(
                ImportJobSerializer,
                description="A large manifest: imported by a worker; follow the job at its url (Location).",
            ),
            400: OpenApiResponse(
                ErrorSerializer,
                description='invalid_manifest; with bad rows, details = {"rows": [{"row": n, "reason": "..."}]}',
            ),
            413: ErrorSerializer,
            503: OpenApiResponse(ErrorSerializer, description="unavailable: the task broker did not answer"),
        },
    )
    def post(self, request: Request) -> Response:
        limit = settings.RATINGGAME["MAX_UPLOAD_BYTES"]
        length = request.META.get("CONTENT_LENGTH") or "0"
        if not length.isdigit() or int(length) > limit:
            raise PayloadTooLarge(f"The upload is over the limit of {limit:,} bytes; split it into several manifests.")
        serializer = ManifestUploadSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        try:
            job = import_job_start(
                created_by=request.user,
                manifest=data["manifest"],
                files=data["images"],
                pool=data["pool"],
                dry_run=data["dry_run"],
                skip_invalid=data["skip_invalid"],
            )
        except (ManifestError, PairInvalid) as error:
            return error_response("invalid_manifest", str(error), 400)
        return import_job_answer(job)


class ImportJobDetail(generics.RetrieveAPIView):
    """An import job: its status, progress, report and refused rows."""

    permission_classes = [IsResearcher]
    serializer_class = ImportJobSerializer
    queryset = ImportJob.objects.all()

    @extend_schema(tags=[TAG], responses={200: ImportJobSerializer, 404: ErrorSerializer})
    def get(self, request: Request, *args, **kwargs) -> Response:
        with contextlib.suppress(ImportJob.DoesNotExist):
            import_job_read(kwargs["pk"])  # a job whose worker died is settled when it is followed
        return super().get(request, *args, **kwargs)
