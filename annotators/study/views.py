"""The study's pages for staff: its settings, read only."""

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from annotators.roles import staff_required
from annotators.study.settings import study


@staff_required
def settings_page(request: HttpRequest) -> HttpResponse:
    return render(request, "annotators/study/settings.html", {"rows": study().rows(), "current": "study"})
