"""The researchers' pages: the study's progress; start a dataset export, follow it, download the zip."""

from django.contrib import messages
from django.http import FileResponse, Http404, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from annotators.roles import researcher_required
from ratinggame.models import MAX_HUMAN_RATINGS, MIN_HUMAN_RATINGS
from scoring.export.jobs import export_download_refusal, export_job_archive_path, export_job_start
from scoring.forms import ExportForm
from scoring.models import ExportJob
from scoring.progress.chart import ratings_per_hour_svg
from scoring.progress.dashboard import CHART_HOURS, study_progress

_LISTED = 50


def _status(job: ExportJob) -> dict:
    done = job.status == ExportJob.Status.DONE
    return {
        "id": job.pk,
        "status": job.status,
        "status_display": job.get_status_display(),
        "progress": job.progress,
        "message": job.progress_message,
        "error": job.error,
        "counts": job.counts,
        "download_url": reverse("scoring:export-download", args=[job.pk]) if done else None,
    }


def _duration(hours: float) -> str:
    if hours < 1:
        return "less than an hour"
    if hours < 1.5:
        return "about an hour"
    if hours < 48:
        return f"about {round(hours)} hours"
    return f"about {hours / 24:.1f} days"


def _progress_context() -> dict:
    progress = study_progress()
    pairs = progress.game_pairs
    return {
        "progress": progress,
        "min_ratings": MIN_HUMAN_RATINGS,
        "max_ratings": MAX_HUMAN_RATINGS,
        "pairs_by_ratings": [
            {"ratings": bucket, "pairs": count, "share": count / pairs if pairs else 0.0}
            for bucket, count in progress.pairs_by_ratings.items()
        ],
        "estimate": progress.estimate,
        "estimate_in": _duration(progress.estimate.hours) if progress.estimate.hours is not None else "",
        "chart_svg": ratings_per_hour_svg(
            start=progress.chart_start,
            counted=progress.counted_per_hour,
            other=progress.other_per_hour,
            title=f"Ratings per hour over the last {CHART_HOURS // 24} days (UTC)",
        ),
    }


def _index(request, form: ExportForm, status: int = 200):
    jobs = ExportJob.objects.select_related("created_by")[:_LISTED]
    context = {"form": form, "jobs": jobs, **_progress_context()}
    return render(request, "scoring/research.html", context, status=status)


@require_GET
@researcher_required
def research_index(request):
    return _index(request, ExportForm())


@require_POST
@researcher_required
def export_start(request):
    form = ExportForm(request.POST)
    if not form.is_valid():
        return _index(request, form, status=400)
    job = export_job_start(created_by=request.user, **form.cleaned_data)
    messages.success(request, f"Export {job.pk} started.")
    return redirect("scoring:research")


@require_GET
@researcher_required
def export_status(request, job_id: int):
    return JsonResponse(_status(get_object_or_404(ExportJob, pk=job_id)))


@require_GET
@researcher_required
def export_download(request, job_id: int):
    job = get_object_or_404(ExportJob, pk=job_id)
    if refusal := export_download_refusal(request.user):
        messages.error(request, refusal)
        return redirect("scoring:research")
    path = export_job_archive_path(job)
    if path is None:
        raise Http404("This export has no archive to download.")
    return FileResponse(path.open("rb"), as_attachment=True, filename=f"export-{job.pk}.zip")
