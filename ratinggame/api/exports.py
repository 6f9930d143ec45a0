"""Dataset export jobs for researchers: start one, follow its status, download its zip.

The jobs are the research pages' (``scoring.export.jobs``): started with ``export_job_start``
(run by the ``scoring.tasks.export_job_run`` Celery task on the default queue), their
parameters checked by the research page's own form (``scoring.forms.ExportForm``), their
archive found by ``export_job_archive_path`` (only inside MEDIA_ROOT/exports).
"""

from django.http import FileResponse, Http404
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import generics, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from ratinggame.api.errors import Conflict, ErrorSerializer
from ratinggame.api.permissions import IsResearcher
from ratinggame.models import MIN_HUMAN_RATINGS
from scoring.export.formats import DEFAULT_FORMATS, FORMATS
from scoring.export.jobs import export_download_refusal, export_job_archive_path, export_job_start
from scoring.forms import ExportForm
from scoring.models import ExportJob

TAG = "exports"


class ExportStartSerializer(serializers.Serializer):
    """The research page's export form, as JSON (the form checks it)."""

    min_ratings = serializers.IntegerField(min_value=1, max_value=100, default=MIN_HUMAN_RATINGS)
    seed = serializers.IntegerField(min_value=0, max_value=2**31 - 1, default=0)
    formats = serializers.ListField(
        child=serializers.ChoiceField(choices=FORMATS), min_length=1, default=lambda: list(DEFAULT_FORMATS)
    )
    with_images = serializers.BooleanField(default=False)

    def validate(self, attrs: dict) -> dict:
        form = ExportForm(data=attrs)
        if not form.is_valid():
            raise serializers.ValidationError(form.errors.get_json_data())
        return form.cleaned_data


class ExportJobSerializer(serializers.ModelSerializer):
    download_url = serializers.SerializerMethodField(help_text="Set when the job is done.")

    class Meta:
        model = ExportJob
        fields = [
            "id",
            "status",
            "progress",
            "progress_message",
            "params",
            "counts",
            "error",
            "created_at",
            "finished_at",
            "download_url",
        ]
        read_only_fields = fields

    @extend_schema_field(OpenApiTypes.STR)
    def get_download_url(self, job: ExportJob) -> str | None:
        if job.status != ExportJob.Status.DONE:
            return None
        return reverse("api_export_download", args=[job.pk])


class ExportJobList(generics.ListCreateAPIView):
    permission_classes = [IsResearcher]
    queryset = ExportJob.objects.order_by("-created_at", "-id")
    serializer_class = ExportJobSerializer
    filterset_fields = ["status"]
    ordering_fields = ["created_at", "id"]

    @extend_schema(tags=[TAG])
    def get(self, request: Request, *args, **kwargs) -> Response:
        return super().get(request, *args, **kwargs)

    @extend_schema(
        tags=[TAG],
        request=ExportStartSerializer,
        responses={202: ExportJobSerializer, 400: ErrorSerializer},
    )
    def post(self, request: Request, *args, **kwargs) -> Response:
        serializer = ExportStartSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        job = export_job_start(created_by=request.user, **serializer.validated_data)
        job.refresh_from_db()
        return Response(ExportJobSerializer(job).data, status=status.HTTP_202_ACCEPTED)


class ExportJobDetail(generics.RetrieveAPIView):
    permission_classes = [IsResearcher]
    queryset = ExportJob.objects.all()
    serializer_class = ExportJobSerializer

    @extend_schema(tags=[TAG], responses={200: ExportJobSerializer, 404: ErrorSerializer})
    def get(self, request: Request, *args, **kwargs) -> Response:
        return super().get(request, *args, **kwargs)


class ExportJobDownload(APIView):
    permission_classes = [IsResearcher]

    def perform_content_negotiation(self, request: Request, force: bool = False):
        # The answer is a zip whatever the client accepts; errors are JSON.
        return super().perform_content_negotiation(request, force=True)

    @extend_schema(
        tags=[TAG],
        responses={
            (200, "application/zip"): OpenApiResponse(OpenApiTypes.BINARY, description="The export bundle."),
            404: ErrorSerializer,
            409: OpenApiResponse(
                ErrorSerializer, description="The job is not done yet, or the caller is rating a game pair."
            ),
        },
    )
    def get(self, request: Request, pk: int) -> FileResponse:
        job = generics.get_object_or_404(ExportJob, pk=pk)
        if refusal := export_download_refusal(request.user):
            raise Conflict(refusal)
        if job.status != ExportJob.Status.DONE:
            raise Conflict(f"Export {job.pk} is {job.status}, not done: there is nothing to download yet.")
        path = export_job_archive_path(job)
        if path is None:
            raise Http404("This export has no archive to download.")
        return FileResponse(path.open("rb"), as_attachment=True, filename=f"export-{job.pk}.zip")
