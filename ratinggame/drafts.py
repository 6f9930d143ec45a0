"""What a refused form of the rating screens sent (or a rating not taken), kept for the page its
redirect leads to.

Every POST of the rating screens answers with a redirect (post/redirect/get), so a refusal cannot
re-render the form it refused. Instead the view keeps what the rater sent and why it was refused in
the session, tied to the assignment on screen, and the GET that follows shows the same pair with
the form as it was sent (the choice, the report's reason and details, the dispute's comment) and
the reason beside it. A draft is read once; one tied to another assignment (the pair has changed
meanwhile) is not shown on the new pair.
"""

from django.http import HttpRequest

# One key per form: a refused rating, report or dispute.
RATING = "rating_refused"
REPORT = "report_refused"
DISPUTE = "dispute_draft"
# A rating sent for a pair already rated (in another tab): the feedback page says it was not taken.
NOT_TAKEN = "rating_not_taken"


def draft_keep(request: HttpRequest, key: str, *, assignment_id: int | None, **sent: object) -> None:
    """Keep ``sent`` (plain values: the session is JSON) for the next page that shows ``assignment_id``."""
    request.session[key] = {**sent, "assignment": assignment_id}


def draft_take(request: HttpRequest, key: str, *, assignment_id: int) -> tuple[dict, dict]:
    """The draft kept under ``key``, removed from the session: (the one for ``assignment_id`` or
    {}, the one kept for another assignment or {})."""
    draft = request.session.pop(key, None) or {}
    if not draft:
        return {}, {}
    if draft.get("assignment") == assignment_id:
        return draft, {}
    return {}, draft
