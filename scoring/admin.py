from django.contrib import admin

from annotators.roles import ReadOnlyAdmin
from ratinggame.models import Assignment
from scoring.models import Calibration, ExportJob, ModelRating, PredictorRun


@admin.register(Calibration)
class CalibrationAdmin(admin.ModelAdmin):
    list_display = ["id", "model_identity", "method", "fitted_on_pairs", "created_at"]
    list_filter = ["method"]


@admin.register(ModelRating)
class ModelRatingAdmin(ReadOnlyAdmin):
    """Model primes, to read only: a pair's ``primes`` (what its raters were scored against) are
    written with these rows by the priming worker alone (``scoring.priming.runner``), so a prime
    added, changed or deleted here would leave the pair and its exports out of step."""

    list_display = ["pair", "slot", "metric", "raw_score", "value", "model_identity", "created_at"]
    list_filter = ["metric"]
    search_fields = ["model_identity", "pair__caption"]
    raw_id_fields = ["pair"]

    def get_queryset(self, request):
        # SPEC 5: not the primes of the pair a staff member is rating right now.
        return super().get_queryset(request).exclude(pair_id__in=Assignment.objects.pairs_held_by(request.user))


@admin.register(PredictorRun)
class PredictorRunAdmin(admin.ModelAdmin):
    list_display = ["id", "created_at", "active", "base_model_identity"]
    list_filter = ["active"]


@admin.register(ExportJob)
class ExportJobAdmin(admin.ModelAdmin):
    list_display = ["id", "status", "progress", "created_by", "created_at", "finished_at"]
    list_filter = ["status"]
