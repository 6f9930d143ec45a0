"""The Django admin of the rater models.

What changes a rater's journey or score (state, scores, the qualification window, a probation
round, a dispute's outcome) is read-only here: those changes go through the staff dashboard's actions (suspend,
reinstate, send to probation, resolve a dispute), which log who did it and why as a RaterAction.
Disputes are filed by raters and resolved on the dashboard only, so none is added, edited or
deleted here (a deleted accepted dispute would let its points be restored twice). The action
log itself is read-only: an audit trail nobody can add to, edit or delete by hand.
"""

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from annotators.models import Dispute, ProbationRound, RaterAction, RaterProfile
from annotators.roles import ReadOnlyAdmin

# Fields of RaterProfile that only the game and the logged staff actions may change.
PROFILE_AUDITED_FIELDS = (
    "state",
    "state_before_suspension",
    "consent_at",
    "tutorial_score",
    "tutorial_completed_at",
    "game_score",
    "game_entered_at",
    "window_count",
    "window_points",
)
DISPUTE_AUDITED_FIELDS = ("status", "points_restored", "resolved_by", "resolved_at", "resolution_note")


@admin.register(RaterProfile)
class RaterProfileAdmin(admin.ModelAdmin):
    list_display = ["user", "state", "tutorial_score", "game_score", "window_count", "consent_at"]
    list_filter = ["state", "on_leaderboard"]
    search_fields = ["user__username", "display_name"]
    raw_id_fields = ["user"]

    def get_fields(self, request, obj=None):
        # A new profile starts where sign-up starts one (the tutorial, no scores).
        if obj is None:
            return ["user", "display_name", "on_leaderboard"]
        return ["display_name", "on_leaderboard", *self.get_readonly_fields(request, obj)]

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return []
        return ["staff_actions", "user", *PROFILE_AUDITED_FIELDS]

    @admin.display(description="State and score changes")
    def staff_actions(self, obj: RaterProfile) -> str:
        return format_html(
            'Read-only here. Suspend, reinstate or send to probation on <a href="{}">this rater\'s staff page</a>, '
            "which records who did it and why.",
            reverse("staff:rater", args=[obj.pk]),
        )


@admin.register(ProbationRound)
class ProbationRoundAdmin(ReadOnlyAdmin):
    """A round's pairs, count, score and outcome are the journey's record (annotators.progress):
    they decide whether the rater went on to the game, so nobody rewrites them by hand."""

    list_display = ["profile", "number", "rated", "score", "passed", "started_at", "finished_at"]
    list_filter = ["passed"]
    search_fields = ["profile__user__username"]


@admin.register(Dispute)
class DisputeAdmin(ReadOnlyAdmin):
    list_display = ["id", "rating", "status", "created_at", "resolved_by"]
    list_filter = ["status"]
    search_fields = ["comment", "rating__rater__username"]
    fields = readonly_fields = ["resolve", "rating", "comment", *DISPUTE_AUDITED_FIELDS]

    @admin.display(description="Resolution")
    def resolve(self, obj: Dispute) -> str:
        return format_html(
            'Read-only here. Accept or reject it in <a href="{}">the staff dispute queue</a>, which restores the '
            "points and records who decided and why.",
            reverse("staff:dispute_resolve", args=[obj.pk]),
        )


@admin.register(RaterAction)
class RaterActionAdmin(ReadOnlyAdmin):
    """The audit log: to read and search only."""

    list_display = ["rater", "action", "actor", "from_state", "to_state", "created_at"]
    list_filter = ["action"]
    search_fields = ["rater__user__username", "reason"]
