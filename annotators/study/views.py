"""The study's pages: the entry link from a recruitment platform, and the staff page of its
settings (read only)."""

from django.contrib.auth import login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET

from annotators.roles import staff_required
from annotators.study import services
from annotators.study.entry import EntryRefused, entry_link
from annotators.study.settings import study


@require_GET
def enter(request: HttpRequest) -> HttpResponse:
    """``/study/enter/?PROLIFIC_PID=...&STUDY_ID=...&SESSION_ID=...`` (or another platform's
    parameters): the participant is created or resumed, logged in, and sent where they are on the
    journey (consent first). Without an id, or on a preview, the study's description only."""
    current = study()
    try:
        link = entry_link(request.GET, current)
        if link is None:
            return render(request, "annotators/study/enter.html", {"preview": True})
        user, _ = services.participant_enter(link=link, now=timezone.now())
    except EntryRefused as refused:
        context = {"refused": refused, "closed": refused.code == "study_closed"}
        return render(request, "annotators/study/enter.html", context, status=refused.status)
    login(request, user, backend="django.contrib.auth.backends.ModelBackend")
    return redirect("annotators:play")


@staff_required
def settings_page(request: HttpRequest) -> HttpResponse:
    return render(request, "annotators/study/settings.html", {"rows": study().rows(), "current": "study"})
