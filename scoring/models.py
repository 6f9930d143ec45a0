"""Model primes and calibrations, learned predictors, and dataset export jobs."""

from django.db import models

from ratinggame.models import TrackedJob


class Calibration(models.Model):
    """A monotone map from a model's raw score to the 1-5 scale (SPEC section 4)."""

    class Method(models.TextChoices):
        DEFAULT = "default", "Documented default"
        ISOTONIC = "isotonic", "Isotonic regression"

    model_identity = models.CharField(max_length=300)
    method = models.CharField(max_length=10, choices=Method.choices)
    # Knots of a piecewise-linear monotone map: raw scores -> ratings.
    x_knots = models.JSONField(default=list)
    y_knots = models.JSONField(default=list)
    fitted_on_pairs = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.method} calibration of {self.model_identity} ({self.fitted_on_pairs} pairs)"


class ModelRating(models.Model):
    """A model-predicted rating that primes a game pair (two per pair)."""

    # No index of its own: the unique (pair, slot) index starts with the pair and serves every
    # lookup by pair; a second index would cost each stored prime one more entry.
    pair = models.ForeignKey(
        "ratinggame.CaptionPair", on_delete=models.CASCADE, related_name="model_ratings", db_index=False
    )
    slot = models.PositiveSmallIntegerField(help_text="1 = first prime (replaced first), 2 = second.")
    model_identity = models.CharField(max_length=300)
    # The scorer's identifier (``scoring.priming.registry``, which checks it when a prime is written).
    metric = models.CharField(max_length=20)
    raw_score = models.FloatField()
    value = models.FloatField(help_text="Calibrated rating on the 1-5 scale.")
    calibration = models.ForeignKey(Calibration, null=True, blank=True, on_delete=models.PROTECT)
    explanation = models.TextField(
        blank=True, help_text="The model's reason for its score (FLEUR's follow-up answer), when it was asked."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["pair", "slot"]
        constraints = [models.UniqueConstraint(fields=["pair", "slot"], name="model_rating_pair_slot")]

    def __str__(self) -> str:
        return f"prime {self.slot} of pair {self.pair_id}: {self.value:.2f}"


class PredictorRun(models.Model):
    """A trained rating predictor (the paper's Model_VICR) and its held-out metrics."""

    created_at = models.DateTimeField(auto_now_add=True)
    checkpoint = models.CharField(max_length=500, blank=True)
    base_model_identity = models.CharField(max_length=300, blank=True)
    metrics = models.JSONField(default=dict)
    active = models.BooleanField(default=False)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"predictor {self.pk} ({'active' if self.active else 'inactive'})"


class ExportJob(TrackedJob):
    archive = models.CharField(max_length=500, blank=True, help_text="Path of the zip under MEDIA_ROOT.")
    counts = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"export {self.pk} ({self.status})"
