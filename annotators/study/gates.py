"""The door a newcomer comes through (sign-up or a platform link) when the study turns them away:
pages of both doors answer with this one page."""

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from annotators.study.settings import study


def study_entry_refusal(request: HttpRequest, *, signup: bool = False) -> HttpResponse | None:
    """The page that turns a newcomer away (403), or None when they may come in
    (``StudySettings.newcomer_refusal`` says why)."""
    refusal = study().newcomer_refusal(signup=signup)
    if refusal is None:
        return None
    return render(request, "annotators/study/closed.html", {"reason": refusal[0]}, status=403)
