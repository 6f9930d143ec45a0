"""Raters: profile and state, consent, probation rounds, disputes, and admin actions."""

import random

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import models
from django.db.models import Exists, OuterRef, Q
from django.db.models.functions import Lower

from annotators.roles import ADMIN, RESEARCHER
from ratinggame.models import TrackedJob


def random_seed() -> int:
    """A rater's own seed: their serving order and where their control pairs fall (SPEC 2.5, 5)."""
    return random.randrange(2**62)


class RaterState(models.TextChoices):
    TUTORIAL = "tutorial", "Tutorial"
    PROBATION = "probation", "Probation"
    GAME = "game", "Game"
    SUSPENDED = "suspended", "Suspended"


class RaterProfileQuerySet(models.QuerySet):
    def raters(self, *, with_withdrawn: bool = False) -> "RaterProfileQuerySet":
        """The people who rate for the study: every profile but staff's and withdrawn accounts'
        (``with_withdrawn``: withdrawn accounts too, for the pay report: their pay is owed).

        Staff are the accounts that run the study (``is_staff``, superusers, the admin and
        researcher roles): their profiles exist because they opened the game to try it, and
        their ratings are kept (and count, like anyone's), but they are not the study's raters.
        A withdrawn account (``ratinggame.game.withdrawal``) is no one any more. The staff
        dashboard, the leaderboard and the researchers' progress page count raters with this.
        """
        staff_roles = Group.objects.filter(user=OuterRef("user_id"), name__in=(ADMIN, RESEARCHER))
        people = self if with_withdrawn else self.filter(withdrawn_at__isnull=True)
        return people.exclude(Q(user__is_staff=True) | Q(user__is_superuser=True) | Exists(staff_roles))


PSEUDONYM_TAKEN = "Another rater uses this pseudonym already: choose another one."


class RaterProfile(models.Model):
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="rater")
    state = models.CharField(max_length=10, choices=RaterState.choices, default=RaterState.TUTORIAL)
    # Where a suspended rater goes back to when reinstated.
    state_before_suspension = models.CharField(max_length=10, choices=RaterState.choices, blank=True)
    consent_at = models.DateTimeField(null=True, blank=True)
    display_name = models.CharField(max_length=40, blank=True)
    on_leaderboard = models.BooleanField(default=True)
    tutorial_score = models.SmallIntegerField(
        null=True, blank=True, help_text="The tutorial's points: the training score."
    )
    tutorial_completed_at = models.DateTimeField(null=True, blank=True)
    game_score = models.IntegerField(default=0)
    # Qualification window (SPEC section 2.3): the first journey.WINDOW_SIZE game ratings after each entry.
    game_entered_at = models.DateTimeField(null=True, blank=True)
    window_count = models.PositiveSmallIntegerField(default=0)
    window_points = models.SmallIntegerField(default=0)
    # Game serves so far (game and control pairs, skipped ones too): which serve of a block of
    # ten holds the control pair, and how many skips the rater has earned (annotators.journey).
    game_serves = models.PositiveIntegerField(default=0)
    # A control pair skipped or reported (SPEC 2.5) does not take the block's check away: one more is
    # owed for each (``controls_owed``), the next at this game serve number or the first after it.
    control_owed_at = models.PositiveIntegerField(null=True, blank=True, editable=False)
    controls_owed = models.PositiveSmallIntegerField(default=0, editable=False)
    # Game pairs passed with "Skip this pair" (SPEC 5's skip limit), counted under the profile's
    # lock by each skip: read with the profile, so the rating screen says whether a skip is allowed
    # without a query of its own.
    game_skips = models.PositiveIntegerField(default=0, editable=False)
    order_seed = models.BigIntegerField(default=random_seed, editable=False)
    # The images of the rater's latest game serves, newest last, as many as the next serve keeps
    # away from (``ratinggame.game.gameplay.images_to_avoid``, SPEC 5): written with each serve.
    recent_images = models.JSONField(default=list, editable=False)
    # The rater's ordinal model (scoring.ordinal: precision, severity and lapse on the 5-level scale),
    # fitted by the periodic competency job; empty until its first fit (the population's then).
    label_precision = models.FloatField(null=True, blank=True, editable=False)
    label_severity = models.FloatField(null=True, blank=True, editable=False)
    label_lapse = models.FloatField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    # When the rater deleted their data ("Delete my data"): the account is anonymised and closed.
    withdrawn_at = models.DateTimeField(null=True, blank=True, editable=False)

    objects = RaterProfileQuerySet.as_manager()

    class Meta:
        ordering = ["id"]
        constraints = [
            # A leaderboard pseudonym is one rater's: nobody copies another's, whatever its case.
            models.UniqueConstraint(
                Lower("display_name"),
                condition=~Q(display_name=""),
                name="profile_display_name_unique_ci",
                violation_error_message=PSEUDONYM_TAKEN,
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user} ({self.state})"


class Platform(models.TextChoices):
    """Where a rater came from through an entry link (``annotators.study.entry``)."""

    PROLIFIC = "prolific", "Prolific"
    GENERIC = "generic", "Other platform"
    MTURK = "mturk", "Mechanical Turk"


class SessionOutcome(models.TextChoices):
    """How a participant's session ended (SPEC 7; ``annotators.study.completion``)."""

    COMPLETED = "completed", "Completed"
    SCREENED_OUT = "screened_out", "Screened out"


class Participation(models.Model):
    """A rater who came through a recruitment platform's link (SPEC 7): the platform's ids, all
    pseudonymous. One external id on one platform is one rater, whatever the device: a later
    visit with the same id resumes them. The row outlives a withdrawal (their pay is owed)."""

    profile = models.OneToOneField(RaterProfile, on_delete=models.CASCADE, related_name="participation")
    platform = models.CharField(max_length=10, choices=Platform.choices)
    external_id = models.CharField(max_length=64)
    study_id = models.CharField(max_length=64, blank=True)
    # The platform's id of the latest visit (Prolific's join key for its submissions).
    session_id = models.CharField(max_length=64, blank=True)
    # Mechanical Turk: the assignment and where its completion is posted back.
    assignment_id = models.CharField(max_length=64, blank=True)
    return_to = models.CharField(max_length=200, blank=True)
    entered_at = models.DateTimeField()
    last_entry_at = models.DateTimeField()
    # The session's end: the quota reached or screened out, when, and when the completion page
    # (with the code) was first shown.
    outcome = models.CharField(max_length=12, choices=SessionOutcome.choices, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    completion_shown_at = models.DateTimeField(null=True, blank=True)
    # Completed by failing probation after having entered the game (never screened out then,
    # SPEC 7): flagged for the researcher.
    probation_after_game = models.BooleanField(
        default=False,
        help_text="Completed by failing probation after entering the game (not screened out): for the researcher "
        "to review.",
    )
    # The platform's status of the participant's submission, as last read (Prolific: ACTIVE,
    # AWAITING REVIEW, APPROVED, ...), and when this site approved it.
    platform_status = models.CharField(max_length=32, blank=True)
    approved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["platform", "external_id"], name="participation_one_rater_per_id"),
        ]

    def __str__(self) -> str:
        return f"{self.get_platform_display()} {self.external_id}"


class BonusState(models.TextChoices):
    """A bonus batch's life (``annotators.study.ledger``): drafted here, created on Prolific (not
    paid), its pay call sent (``paying``: until Prolific's answer is in; a lost answer leaves it so,
    counted as paid, never sent again), paid; or failed (Prolific refused it: nothing was paid)."""

    DRAFT = "draft", "Draft (not on Prolific yet)"
    CREATED = "created", "Created on Prolific, not paid"
    PAYING = "paying", "Pay sent, answer not received"
    PAID = "paid", "Paid"
    FAILED = "failed", "Failed: nothing paid"
    CANCELLED = "cancelled", "Cancelled: nothing paid"


# At most one batch of a study is on its way at a time: its lines are what the next batch subtracts.
BONUS_OPEN_STATES = (BonusState.DRAFT, BonusState.CREATED, BonusState.PAYING)


class BonusBatch(models.Model):
    """One bulk bonus on Prolific: what each participant is owed up to a day, less what earlier
    batches paid them. The ledger that makes paying twice impossible (SPEC 7)."""

    study_id = models.CharField(max_length=64)
    up_to = models.DateField(help_text="Earnings up to the end of this day (UTC) are paid.")
    state = models.CharField(max_length=10, choices=BonusState.choices, default=BonusState.DRAFT)
    currency = models.CharField(max_length=3)
    total = models.DecimalField(max_digits=12, decimal_places=2)
    prolific_id = models.CharField(max_length=64, blank=True, help_text="Prolific's id of the bulk bonus payment.")
    created_at = models.DateTimeField()
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    pay_sent_at = models.DateTimeField(null=True, blank=True)
    paid_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["study_id"], condition=Q(state__in=BONUS_OPEN_STATES), name="bonus_one_open_batch_per_study"
            ),
        ]

    def __str__(self) -> str:
        return f"Bonus batch {self.pk} ({self.get_state_display()})"


class BonusLine(models.Model):
    batch = models.ForeignKey(BonusBatch, on_delete=models.CASCADE, related_name="lines")
    participation = models.ForeignKey(Participation, on_delete=models.PROTECT, related_name="bonus_lines")
    amount = models.DecimalField(max_digits=10, decimal_places=2)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["batch", "participation"], name="bonus_line_one_per_participant"),
            models.CheckConstraint(condition=Q(amount__gt=0), name="bonus_line_amount_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.participation}: {self.amount}"


class ProbationRound(models.Model):
    profile = models.ForeignKey(RaterProfile, on_delete=models.CASCADE, related_name="probation_rounds")
    number = models.PositiveSmallIntegerField()
    pair_order = models.JSONField(default=list, help_text="Pair ids in the order served this round.")
    score = models.SmallIntegerField(default=0)
    rated = models.PositiveSmallIntegerField(default=0)
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    passed = models.BooleanField(null=True)

    class Meta:
        ordering = ["profile", "number"]
        constraints = [models.UniqueConstraint(fields=["profile", "number"], name="probation_round_unique")]

    def __str__(self) -> str:
        return f"{self.profile} probation round {self.number}"


class DisputeStatus(models.TextChoices):
    OPEN = "open", "Open"
    ACCEPTED = "accepted", "Accepted"
    REJECTED = "rejected", "Rejected"


class Dispute(models.Model):
    """A rater's 'dispute this score' comment on a game rating, for admins to resolve."""

    rating = models.ForeignKey("ratinggame.Rating", on_delete=models.CASCADE, related_name="disputes")
    comment = models.TextField()
    status = models.CharField(max_length=10, choices=DisputeStatus.choices, default=DisputeStatus.OPEN)
    created_at = models.DateTimeField(auto_now_add=True)
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolution_note = models.TextField(blank=True)
    points_restored = models.SmallIntegerField(default=0)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            # One dispute per rating, whatever its outcome: parallel "dispute this score" posts
            # cannot file two, and an accepted dispute cannot be followed by another one.
            models.UniqueConstraint(fields=["rating"], name="dispute_one_per_rating"),
        ]

    def __str__(self) -> str:
        return f"dispute on rating {self.rating_id} ({self.status})"


class RaterAction(models.Model):
    """Audit log of what staff did to a rater, by whom and why."""

    rater = models.ForeignKey(RaterProfile, on_delete=models.CASCADE, related_name="actions")
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    action = models.CharField(max_length=40)
    reason = models.TextField()
    from_state = models.CharField(max_length=10, blank=True)
    to_state = models.CharField(max_length=10, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.action} {self.rater} ({self.created_at:%Y-%m-%d})"


class CompetencyAnalysis(TrackedJob):
    """One run of the Partial Credit Model analysis of rater competency (annotators.competency.analysis),
    a tracked job like imports and exports: ``created_by`` is the staff member who asked for it
    (none for the periodic check)."""

    # Game ratings on record when the run was requested: the periodic check compares the
    # current count with it (RATINGGAME_COMPETENCY_EVERY).
    game_ratings_count = models.PositiveIntegerField(default=0)
    n_raters = models.PositiveIntegerField(default=0)
    n_items = models.PositiveIntegerField(default=0)
    n_responses = models.PositiveIntegerField(default=0)
    abilities = models.JSONField(default=dict, blank=True, help_text="{rater profile id: [ability, se]} in logits.")
    regression = models.JSONField(default=dict, blank=True, help_text="Latent regression of tutorial score.")
    details = models.JSONField(default=dict, blank=True, help_text="Items used, convergence, extreme scores.")
    rater_quality = models.JSONField(
        default=dict, blank=True, help_text="{rater profile id: Dawid-Skene expected accuracy 0..1} on game ratings."
    )
    wright_map_svg = models.TextField(blank=True)
    duration_seconds = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "competency analyses"

    def __str__(self) -> str:
        return f"competency analysis {self.pk} ({self.status})"
