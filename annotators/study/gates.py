"""The study's gates: the page that turns a newcomer away (sign-up or a platform link), and the
completion page in front of the rating screens once a participant's session has ended."""

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone

from annotators.study.completion import may_rate_on, session_end_check
from annotators.study.settings import study


def study_entry_refusal(request: HttpRequest, *, signup: bool = False) -> HttpResponse | None:
    """The page that turns a newcomer away (403), or None when they may come in
    (``StudySettings.newcomer_refusal`` says why)."""
    refusal = study().newcomer_refusal(signup=signup)
    if refusal is None:
        return None
    return render(request, "annotators/study/closed.html", {"reason": refusal[0]}, status=403)


def session_gate(user) -> HttpResponse | None:
    """For the rating screens: a participant whose session has ended goes to the completion page
    (the first time in any case; afterwards when they may not rate on), else None."""
    participation = session_end_check(user=user, now=timezone.now())
    if participation is None:
        return None
    if participation.completion_shown_at is None or not may_rate_on(participation, study()):
        return redirect("annotators:study_complete")
    return None
