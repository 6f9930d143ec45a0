"""The researchers' import page: upload a manifest and its images from the browser.

The upload runs through the same job as the API's (``ratinggame.pairs.jobs.import_job_start``),
and so through ``manage.py import_pairs``'s importer: every row checked first, all or nothing
(unless "skip invalid rows"), the refused rows named. A small manifest is imported during the
request; a large one by a worker, and the job's page follows its progress. Every POST answers
with a redirect.
"""

from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from annotators.roles import researcher_required
from ratinggame.models import ImportJob, Pool
from ratinggame.pairs.importing import ManifestError
from ratinggame.pairs.jobs import import_job_read, import_job_start
from ratinggame.pairs.validation import PairInvalid

_LISTED = 20


@require_http_methods(["GET", "POST"])
@researcher_required
def import_page(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        return _import_start(request)
    context = {
        "jobs": ImportJob.objects.select_related("created_by")[:_LISTED],
        "pools": Pool.choices,
        "max_upload_bytes": settings.RATINGGAME["MAX_UPLOAD_BYTES"],
    }
    return render(request, "ratinggame/import.html", context)


def _import_start(request: HttpRequest) -> HttpResponse:
    manifest = request.FILES.get("manifest")
    if manifest is None:
        messages.error(request, "Choose a manifest file (CSV or JSON Lines) to import.")
        return redirect("pairs_import")
    size = sum(upload.size for uploads in request.FILES.lists() for upload in uploads[1])
    if size > settings.RATINGGAME["MAX_UPLOAD_BYTES"]:
        messages.error(request, f"The upload is over {settings.RATINGGAME['MAX_UPLOAD_BYTES']:,} bytes: split it.")
        return redirect("pairs_import")
    try:
        job = import_job_start(
            created_by=request.user,
            manifest=manifest,
            files=request.FILES.getlist("images"),
            pool=request.POST.get("pool", Pool.GAME),
            dry_run=request.POST.get("dry_run") == "on",
            skip_invalid=request.POST.get("skip_invalid") == "on",
        )
    except (ManifestError, PairInvalid) as error:
        messages.error(request, f"Nothing was imported: {error}")
        return redirect("pairs_import")
    return redirect("pairs_import_job", import_id=job.pk)


@require_GET
@researcher_required
def import_job(request: HttpRequest, import_id: int) -> HttpResponse:
    _settled(import_id)
    job = get_object_or_404(ImportJob.objects.select_related("created_by"), pk=import_id)
    return render(request, "ratinggame/import_job.html", {"job": job})


def _settled(import_id: int) -> None:
    """A job whose worker died is settled when it is followed (``import_job_read``)."""
    try:
        import_job_read(import_id)
    except ImportJob.DoesNotExist:
        raise Http404 from None


@require_GET
@researcher_required
def import_job_status(request: HttpRequest, import_id: int) -> JsonResponse:
    _settled(import_id)
    job = get_object_or_404(ImportJob, pk=import_id)
    return JsonResponse(
        {
            "status": job.status,
            "status_display": job.get_status_display(),
            "progress": job.progress,
            "message": job.progress_message,
        }
    )
