"""The researchers' pages: start a dataset export, follow its progress, download the zip."""

from functools import wraps

from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import FileResponse, Http404, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from annotators.roles import is_researcher
from scoring.export.jobs import export_download_refusal, export_job_archive_path, export_job_start
from scoring.forms import ExportForm
from scoring.models import ExportJob

_LISTED = 50


def researcher_required(view):
    @wraps(view)
    def checked(request, *args, **kwargs):
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not is_researcher(request.user):
            raise PermissionDenied("Only researchers can export the dataset.")
        return view(request, *args, **kwargs)

    return checked


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


def _index(request, form: ExportForm, status: int = 200):
    jobs = ExportJob.objects.select_related("created_by")[:_LISTED]
    return render(request, "scoring/research.html", {"form": form, "jobs": jobs}, status=status)


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
