"""The study's pages: the entry link from a recruitment platform, the completion page, the pay
report (staff and researchers), and the staff page of the study's settings (read only)."""

from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods

from annotators.models import BonusBatch, Participation
from annotators.roles import researcher_required
from annotators.study import services
from annotators.study.completion import completion_code, may_rate_on, session_end_check
from annotators.study.entry import EntryRefused, entry_link, return_url
from annotators.study.forms import PayPeriodForm, UpToForm
from annotators.study.pay_files import FILES
from annotators.study.report import pay_report
from annotators.study.review import reject_eligible
from annotators.study.settings import study


@require_http_methods(["GET", "POST"])
def enter(request: HttpRequest) -> HttpResponse:
    """``/study/enter/?PROLIFIC_PID=...&STUDY_ID=...&SESSION_ID=...`` (or another platform's
    parameters): the participant is created or resumed, logged in, and sent where they are on the
    journey (consent first). Without an id, or on a preview, the study's description only.

    Someone signed in as another account who follows a participant link is asked first, and
    only a POST (with its CSRF token) switches the session: a GET that any page can send would
    otherwise sign a staff member out and into a participant's account (login CSRF)."""
    current = study()
    try:
        link = entry_link(request.GET, current)
        if link is None:
            return render(request, "annotators/study/enter.html", {"preview": True})
        if (
            request.method == "GET"
            and request.user.is_authenticated
            and not services.link_is_of(link=link, user=request.user)
        ):
            context = {"switch": True, "signed_in_as": request.user.get_username()}
            return render(request, "annotators/study/enter.html", context)
        user, _ = services.participant_enter(link=link, now=timezone.now())
    except EntryRefused as refused:
        context = {"refused": refused, "closed": refused.code == "study_closed"}
        return render(request, "annotators/study/enter.html", context, status=refused.status)
    login(request, user, backend="django.contrib.auth.backends.ModelBackend")
    return redirect("annotators:play")


# Seconds the completion page waits before it sends the participant back to their platform.
RETURN_AFTER_SECONDS = 5


@login_required
def complete(request: HttpRequest) -> HttpResponse:
    """The end of a participant's session: the code and the way back to their platform."""
    now = timezone.now()
    participation = session_end_check(user=request.user, now=now)
    if participation is None:
        return redirect("annotators:play")
    if participation.completion_shown_at is None:
        Participation.objects.filter(pk=participation.pk, completion_shown_at__isnull=True).update(
            completion_shown_at=now
        )
    current = study()
    code = completion_code(participation, current)
    may_continue = may_rate_on(participation, current)
    back = return_url(participation, code, current) if code else ""
    context = {
        "participation": participation,
        "code": code,
        "return_url": back,
        "may_continue": may_continue,
        # Sent back by itself only when there is nothing more to do here.
        "refresh_seconds": RETURN_AFTER_SECONDS if back and not may_continue else None,
    }
    return render(request, "annotators/study/complete.html", context)


@researcher_required
@require_GET
def settings_page(request: HttpRequest) -> HttpResponse:
    """The study's settings, read only: the researcher who runs the study checks them here."""
    return render(request, "annotators/study/settings.html", {"rows": study().rows()})


@researcher_required
@require_GET
def pay_page(request: HttpRequest) -> HttpResponse:
    """The pay report for a period, on a page, or as a file (``?download=prolific`` or ``csv``)."""
    form = PayPeriodForm(request.GET if "start" in request.GET or "end" in request.GET else PayPeriodForm.this_month())
    kind = request.GET.get("download", "")
    if not form.is_valid() or (kind and kind not in FILES):
        if kind and kind not in FILES:
            form.add_error(None, f"Unknown download {kind!r}: {', '.join(FILES)}.")
        return render(request, "annotators/study/pay.html", {"form": form, **_bonus_context(None)}, status=400)
    start, end = form.cleaned_data["period"]
    report = pay_report(start=start, end=end)
    if kind:
        content_type, write = FILES[kind]
        response = HttpResponse(write(report), content_type=f"{content_type}; charset=utf-8")
        name = f"pay-{form.cleaned_data['start']}-{form.cleaned_data['end']}-{kind}.csv"
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        return response
    query = f"start={form.cleaned_data['start']}&end={form.cleaned_data['end']}"
    context = {
        "form": form,
        "report": report,
        "query": query,
        "reject_eligible": reject_eligible(),
        **_bonus_context(form.cleaned_data["end"]),
    }
    return render(request, "annotators/study/pay.html", context)


def _bonus_context(last_day) -> dict:
    """The pay page's Prolific part: the ledger's latest batches and the form that drafts one."""
    rules = study()
    return {
        "current": "pay",
        "batches": BonusBatch.objects.order_by("-id")[:20],
        "up_to_form": UpToForm(initial={"up_to": last_day}),
        "prolific_ready": bool(rules.prolific_study_id and rules.prolific_api_token),
    }
