"""Pages of pair reports: the rater's "Report a problem" on the rating screen, and staff's queue.

The rules (the skip, its hourly limit, withdrawal after enough reports) are in
``ratinggame.game.reports``; these views validate, call one service and redirect.
"""

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count, Prefetch, Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from annotators.gates import PLAYING_STEPS, STEP_STAGES, step_gate
from annotators.progress import current_step
from annotators.roles import staff_required
from ratinggame import drafts
from ratinggame.forms import PairReportForm, ReportResolveForm
from ratinggame.game.reports import REPORT_MAX_CHARS, ReportRefused, pair_report, reports_resolve
from ratinggame.models import GAME_STAGES, CaptionPair, PairReport, Pool, ReportReason


@login_required
@require_POST
def report(request: HttpRequest) -> HttpResponse:
    """Report the pair on the rater's screen; in the game the next pair follows (a skip)."""
    if gate := step_gate(request.user, PLAYING_STEPS):
        return gate
    here = redirect("rate", stage=STEP_STAGES[current_step(request.user)])
    form = PairReportForm(request.POST)
    if not form.is_valid():
        return _refused(request, form, FORM_ERRORS[next(iter(form.errors))], here)
    try:
        reported = pair_report(
            rater=request.user,
            assignment_id=form.cleaned_data["assignment"],
            reason=form.cleaned_data["reason"],
            text=form.cleaned_data["text"],
        )
    except ReportRefused as refused:
        return _refused(request, form, str(refused), here)
    # Issue 35, item 3: "You can skip 9 more this hour" read as a second skip limit beside "Skip
    # this pair"'s. The hourly limit is the reports': named as such, and only when it is near.
    if reported.skipped:
        left = reported.skips_left
        near = (
            ""
            if left > REPORT_LIMIT_NEAR
            else " That was the last pair you may report and skip this hour."
            if left == 0
            else f" You can report and skip {left} more pair{'s' if left != 1 else ''} this hour."
        )
        messages.success(
            request, f"Thank you: the pair is reported and skipped (no rating, no points); staff will look at it.{near}"
        )
    elif reported.report.stage == Pool.ATTENTION:
        messages.success(
            request,
            "Thank you: staff will look at it. An attention check is not skipped: please choose the level its "
            "caption asks for.",
        )
    elif reported.report.stage in GAME_STAGES:  # a control is a game pair to the rater
        messages.warning(
            request,
            "Thank you: staff will look at it. You have reported and skipped as many pairs as you may in an hour, "
            "so this one stays: please rate it as well as you can.",
        )
    else:
        messages.success(
            request,
            "Thank you: staff will look at it. Tutorial and probation pairs cannot be skipped: please rate it as "
            "well as you can.",
        )
    return here


REPORT_LIMIT_NEAR = 2  # reports left this hour from which the answer says how many

# Why the report form was refused, by its first field in error (the rating screen says "The report
# was not sent." before it). Without an assignment no pair is on screen to show it beside.
FORM_ERRORS = {
    "assignment": "The report was not sent: the form did not say which pair it reports.",
    "reason": "Choose what is wrong with the pair.",
    "text": f"Keep the details under {REPORT_MAX_CHARS} characters.",
}


def _refused(request: HttpRequest, form: PairReportForm, message: str, here: HttpResponse) -> HttpResponse:
    """Back to the rating screen (``here``), where the report form comes back open, as the rater
    filled it, with ``message`` beside it (``ratinggame.drafts``)."""
    assignment_id = form.cleaned_data.get("assignment")
    reason = request.POST.get("reason", "")
    drafts.draft_keep(
        request,
        drafts.REPORT,
        assignment_id=assignment_id,
        reason=reason if reason in ReportReason.values else "",
        text=request.POST.get("text", "")[:REPORT_MAX_CHARS],
        message=message,
    )
    return here


def _with_reports(pairs):
    """Pairs with their image and their reports (who filed and who answered each) in one go."""
    reports = PairReport.objects.select_related("rater", "resolved_by").order_by("created_at", "id")
    return pairs.select_related("image").prefetch_related(Prefetch("reports", queryset=reports))


def _queue_pairs(open_only: bool) -> list[CaptionPair]:
    pairs = _with_reports(
        CaptionPair.objects.filter(reports__isnull=False)
        .annotate(open_reports=Count("reports", filter=Q(reports__resolved_at__isnull=True)))
        .order_by("-open_reports", "id")
    )
    pairs = pairs.filter(open_reports__gt=0) if open_only else pairs.filter(open_reports=0)
    return list(pairs[:200])


@staff_required
@require_http_methods(["GET"])
def queue(request: HttpRequest) -> HttpResponse:
    resolved = request.GET.get("status") == "resolved"
    rows = [
        {"pair": pair, "form": ReportResolveForm(auto_id=f"id_pair{pair.pk}_%s")}
        for pair in _queue_pairs(open_only=not resolved)
    ]
    context = {"rows": rows, "resolved": resolved, "threshold": settings.RATINGGAME["REPORTS_TO_WITHDRAW"]}
    return render(request, "ratinggame/reports.html", context)


@staff_required
@require_http_methods(["GET", "POST"])
def resolve(request: HttpRequest, pair_id: int) -> HttpResponse:
    pair = get_object_or_404(_with_reports(CaptionPair.objects.all()), pk=pair_id)
    form = ReportResolveForm(request.POST or None)
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                closed = reports_resolve(
                    pair=pair,
                    actor=request.user,
                    back_in_play=form.cleaned_data["decision"] == "back",
                    note=form.cleaned_data["note"],
                )
            except ReportRefused as refused:
                form.add_error(None, str(refused))
            else:
                messages.success(request, f"Pair {pair.pk}: {closed} report{'s' if closed != 1 else ''} answered.")
                return redirect("pair_reports")
        status = 400
    return render(request, "ratinggame/report_resolve.html", {"pair": pair, "form": form}, status=status)
