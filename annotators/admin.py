from django.contrib import admin

from annotators.models import Dispute, ProbationRound, RaterAction, RaterProfile


@admin.register(RaterProfile)
class RaterProfileAdmin(admin.ModelAdmin):
    list_display = ["user", "state", "tutorial_score", "game_score", "window_count", "consent_at"]
    list_filter = ["state", "on_leaderboard"]
    search_fields = ["user__username", "display_name"]
    raw_id_fields = ["user"]


@admin.register(ProbationRound)
class ProbationRoundAdmin(admin.ModelAdmin):
    list_display = ["profile", "number", "rated", "score", "passed", "started_at", "finished_at"]
    list_filter = ["passed"]
    search_fields = ["profile__user__username"]


@admin.register(Dispute)
class DisputeAdmin(admin.ModelAdmin):
    list_display = ["id", "rating", "status", "created_at", "resolved_by"]
    list_filter = ["status"]
    search_fields = ["comment", "rating__rater__username"]
    raw_id_fields = ["rating"]


@admin.register(RaterAction)
class RaterActionAdmin(admin.ModelAdmin):
    list_display = ["rater", "action", "actor", "from_state", "to_state", "created_at"]
    list_filter = ["action"]
    search_fields = ["rater__user__username", "reason"]
