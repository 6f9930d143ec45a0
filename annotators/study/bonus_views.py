"""The pay page's Prolific actions (researchers and staff): a bonus batch drafted up to a day,
shown whole before anything goes to Prolific, then paid with one more press (``ledger``: never
twice); the researcher's word on a batch whose answer was lost; approving completed submissions,
shown first too. Every action is a POST (CSRF-checked) answered by a redirect, so a reload or Back
never sends one again; what Prolific answered is said in a message."""

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from annotators.models import BonusBatch, BonusState
from annotators.roles import researcher_required
from annotators.study import ledger
from annotators.study.forms import UpToForm
from annotators.study.report import PayPeriodError


@require_POST
@researcher_required
def bonus_draft(request: HttpRequest) -> HttpResponse:
    form = UpToForm(request.POST)
    if not form.is_valid():
        messages.error(request, " ".join(form.errors["up_to"]))
        return redirect("annotators:pay_report")
    try:
        batch = ledger.batch_current(up_to=form.cleaned_data["up_to"], by=request.user, now=timezone.now())
    except (ledger.LedgerError, PayPeriodError) as error:
        messages.error(request, str(error))
        return redirect("annotators:pay_report")
    return redirect("annotators:bonus_batch", batch_id=batch.pk)


@require_http_methods(["GET", "POST"])
@researcher_required
def bonus_batch(request: HttpRequest, batch_id: int) -> HttpResponse:
    """A batch whole (its lines and total), and what may be done with it now."""
    batch = get_object_or_404(BonusBatch, pk=batch_id)
    if request.method == "POST":
        _act(request, batch, request.POST.get("action", ""))
        return redirect("annotators:bonus_batch", batch_id=batch.pk)
    lines = batch.lines.select_related("participation").order_by("participation__external_id")
    return render(request, "annotators/study/bonus_batch.html", {"batch": batch, "lines": lines, "states": BonusState})


def _act(request: HttpRequest, batch: BonusBatch, action: str) -> None:
    now = timezone.now()
    try:
        if action == "pay":
            api = ledger.client()
            try:
                batch = ledger.batch_pay(ledger.batch_create(batch, api), api, now=now)
            finally:
                api.close()
            messages.success(request, f"Batch {batch.pk} is paid: {batch.total} {batch.currency}.")
        elif action == "cancel":
            ledger.batch_cancel(batch)
            messages.success(request, f"Batch {batch.pk} is cancelled: nothing of it was paid.")
        elif action in ("paid", "not_paid"):
            batch = ledger.batch_resolve(batch, paid=action == "paid", now=now)
            messages.success(request, f"Batch {batch.pk}: {batch.get_state_display().lower()}.")
        else:
            messages.error(request, "Unknown action: nothing was done.")
    except ledger.LedgerError as error:
        messages.error(request, str(error))


@require_POST
@researcher_required
def approve(request: HttpRequest) -> HttpResponse:
    """Approve the submissions of participants whose session here completed: first shown
    (``confirm`` absent), then done."""
    confirm = request.POST.get("confirm") == "1"
    try:
        api = ledger.client()
        try:
            found = ledger.submissions_sync(api, approve=confirm, now=timezone.now())
        finally:
            api.close()
    except ledger.LedgerError as error:
        messages.error(request, str(error))
        return redirect("annotators:pay_report")
    if confirm:
        messages.success(request, f"Approved on Prolific: {len(found.approvable)} submission(s).")
        return redirect("annotators:pay_report")
    return render(request, "annotators/study/approve.html", {"found": found})
