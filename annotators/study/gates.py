"""The study's gates: the page that turns a newcomer away (sign-up or a platform link), and the
completion page in front of the rating screens once a participant's session has ended."""

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from annotators.study.completion import Session
from annotators.study.settings import study


def study_entry_refusal(request: HttpRequest, *, signup: bool = False) -> HttpResponse | None:
    """The page that turns a newcomer away (403), or None when they may come in
    (``StudySettings.newcomer_refusal`` says why)."""
    refusal = study().newcomer_refusal(signup=signup)
    if refusal is None:
        return None
    return render(request, "annotators/study/closed.html", {"reason": refusal[0]}, status=403)


def session_gate(session: Session | None) -> HttpResponse | None:
    """For the rating screens, with the rater's session (``session_of``): a participant whose
    session has ended goes to the completion page (the first time in any case; afterwards when
    they may not rate on), else None."""
    if session is None or not session.ended:
        return None
    if session.participation.completion_shown_at is None or session.closed:
        return redirect("annotators:study_complete")
    return None
