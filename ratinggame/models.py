"""The game's data: images, caption pairs, assignments (a pair served to a rater) and ratings."""

import random
from datetime import datetime

from django.conf import settings
from django.contrib.sessions.base_session import AbstractBaseSession
from django.db import models
from django.db.models import Exists, Min, OuterRef, Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from ratinggame.pairs.storage import image_storage
from scoring import ordinal

# SPEC sections 5 and 6: each game pair collects 3 to 7 human ratings; a pair with at least 3
# non-excluded human ratings is validated (it enters the dataset).
MIN_HUMAN_RATINGS = 3
MAX_HUMAN_RATINGS = 7


class Pool(models.TextChoices):
    """The pool a pair belongs to, which is also the stage in which it is served and rated.

    Control pairs (SPEC 2.5) are expert-rated pairs hidden in the game: served, shown and scored
    like game pairs, so to the rater their stage is "game"; their assignments and ratings are
    stored with the stage "control", which keeps them out of every consensus, cap and export.
    Guide pairs are the Rating Guide's examples, one or more per level with the expert rating and
    why (``annotators.gates.guide_context``): shown beside the rubric from the first tutorial pair
    on, never served, rated, primed or exported. Attention-check pairs (SPEC 7, a study's option)
    are instructed-response items whose caption says which level to choose (their expert rating):
    served in the game to study participants, scored nowhere, recorded with their own stage.
    """

    TUTORIAL = "tutorial", "Tutorial"
    PROBATION = "probation", "Probation"
    GAME = "game", "Game"
    CONTROL = "control", "Control"
    GUIDE = "guide", "Rating Guide example"
    ATTENTION = "attention", "Attention check"


# The stages a rater meets in the game: game pairs and the control pairs among them. Ratings of
# both make the game score, the qualification window and the rater's game record.
GAME_STAGES = (Pool.GAME, Pool.CONTROL)
# What the game screen serves: its pairs, and a study's attention checks (SPEC 7: instructed-response
# pairs, "For this pair choose 1", optional), which are in no score, window, quota or dataset.
SERVED_IN_GAME = (*GAME_STAGES, Pool.ATTENTION)
# Pools whose pairs carry an expert rating, which a manifest must give; of them, the pools that
# teach the scale also need why the experts chose it (a control pair's explanation is for staff).
EXPERT_POOLS = frozenset({Pool.TUTORIAL, Pool.PROBATION, Pool.GUIDE, Pool.CONTROL, Pool.ATTENTION})
TEACHING_POOLS = frozenset({Pool.TUTORIAL, Pool.PROBATION, Pool.GUIDE})


class CaptionSource(models.TextChoices):
    COCO = "coco", "COCO"
    PYTHIA = "pythia", "Pythia"
    GLACNET = "glacnet", "GLAC Net"
    MISMATCHED = "mismatched", "Mismatched"
    FLICKR8K = "flickr8k", "Flickr8k"
    OTHER = "other", "Other"


# The folder of MEDIA_ROOT that holds the image files (and nothing else).
IMAGES_DIR = "images"


def image_upload_path(instance: "Image", filename: str) -> str:
    # Content-addressed: the stored name comes from the sha256, never from the user.
    extension = filename.rsplit(".", 1)[-1].lower() if "." in filename else "img"
    return f"{IMAGES_DIR}/{instance.sha256[:2]}/{instance.sha256}.{extension}"


class Image(models.Model):
    file = models.ImageField(upload_to=image_upload_path, storage=image_storage, max_length=200)
    sha256 = models.CharField(max_length=64, unique=True, editable=False)
    width = models.PositiveIntegerField(editable=False, default=0)
    height = models.PositiveIntegerField(editable=False, default=0)
    original_name = models.CharField(max_length=255, blank=True, help_text="File name as imported.")
    source = models.CharField(
        max_length=200, blank=True, help_text="Where the image came from (collection, URL, licence)."
    )
    # Display copies beside the file (ratinggame.pairs.derivatives), smallest first:
    # [{"name": storage name, "width": px, "height": px}, ...]; empty: pages show the original.
    derivatives = models.JSONField(default=list, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return self.original_name or self.sha256[:12]


ORDER_KEY_LIMIT = 2**31  # order keys are 0 .. 2**31 - 1 (an integer column on every database)


def random_order_key() -> int:
    """A new pair's place among pairs of its serving rank (ratinggame.game.assignment): random,
    so that no rater's order follows the order of import."""
    return random.randrange(ORDER_KEY_LIMIT)


class CaptionPairQuerySet(models.QuerySet):
    def game(self) -> "CaptionPairQuerySet":
        return self.filter(pool=Pool.GAME)

    def validated(self, min_ratings: int = MIN_HUMAN_RATINGS) -> "CaptionPairQuerySet":
        """Game pairs with at least ``min_ratings`` non-excluded human ratings (SPEC section 6)."""
        return self.game().filter(human_count__gte=min_ratings)

    def one_per_image(self, limit: int) -> "CaptionPairQuerySet":
        """The first pair (lowest id) of each of the first ``limit`` images among these pairs: as
        many pictures as pairs, chosen by neither rating nor consensus (which raters must not see)."""
        images = Image.objects.filter(Exists(self.filter(image=OuterRef("pk")))).order_by("id")[:limit]
        firsts = self.filter(image__in=images).values("image_id").annotate(first=Min("id")).values("first")
        return self.filter(pk__in=firsts).order_by("image_id")


class PrimingStatus(models.TextChoices):
    NOT_NEEDED = "not_needed", "Not needed (tutorial/probation)"
    PENDING = "pending", "Pending"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class AssignRank(models.IntegerChoices):
    """A game pair's place in the serving order (SPEC section 5); lower is served first.

    Pairs that take no more raters have no rank (NULL). See ratinggame.game.assignment.
    """

    NEAR_MINIMUM = 0, "Started, one rating short of 3"
    STARTED = 1, "Started, two ratings short of 3"
    DISAGREEING = 2, "3 to 6 ratings, needing more by the assignment policy"
    FRESH = 3, "No rating yet"


class LevelPrior(models.Model):
    """The level prior of a refit of the raters' models (``scoring.ordinal.RaterFit.levels``: the
    shares of the five levels among the study's pairs), one row per refit; the game decides with
    the latest (``ratinggame.game.prior``)."""

    fitted_at = models.DateTimeField()
    shares = models.JSONField()
    pairs = models.PositiveIntegerField(help_text="Pairs of unknown level it was fitted on.")
    ratings_through = models.PositiveBigIntegerField(
        default=0, help_text="The latest rating the fit read (its id): the next fit is due after the ones since."
    )

    class Meta:
        ordering = ["-fitted_at", "-id"]

    def __str__(self) -> str:
        return f"Level prior of {self.fitted_at:%Y-%m-%d %H:%M} ({self.pairs} pairs)"

    @classmethod
    def in_force(cls) -> tuple[float, ...] | None:
        """The latest refit's shares, as the settled policy and the export read them; None (a flat
        prior) before the first refit or with ``RATINGGAME_LEVEL_PRIOR`` off."""
        if not settings.RATINGGAME["LEVEL_PRIOR"]:
            return None
        shares = cls.objects.values_list("shares", flat=True).first()
        return tuple(shares) if shares else None


class CaptionPair(models.Model):
    # No index of its own: the unique (image, caption) index starts with the image and serves every
    # lookup by image; a second one would cost each new pair and each moved row version an entry.
    image = models.ForeignKey(Image, on_delete=models.PROTECT, related_name="pairs", db_index=False)
    caption = models.TextField()
    source = models.CharField(max_length=20, choices=CaptionSource.choices, default=CaptionSource.OTHER)
    pool = models.CharField(max_length=10, choices=Pool.choices, default=Pool.GAME)
    references = models.JSONField(default=list, blank=True, help_text="Reference captions (for RefCLIP-S).")
    expert_rating = models.PositiveSmallIntegerField(null=True, blank=True)
    explanation = models.TextField(blank=True)
    display_order = models.PositiveIntegerField(default=0)

    # Consensus aggregates of the non-excluded human ratings, kept in step with the ratings
    # under a row lock (O(1) per rating; see ratinggame.pairs.services).
    human_count = models.PositiveIntegerField(default=0)
    human_sum = models.PositiveIntegerField(default=0)
    human_sumsq = models.PositiveIntegerField(default=0)
    # Calibrated model primes still on record for this pair, oldest first (SPEC section 4):
    # the first `human_count` of them are replaced by human ratings.
    primes = models.JSONField(default=list, blank=True)
    # The ordinal rater model's evidence about the pair's true level (scoring.ordinal): the sum of
    # log P(rating | level) over the same ratings, five numbers, kept in step under the same lock;
    # empty: no rating yet. The "settled" policy reads it (SPEC 5.1).
    label_evidence = models.JSONField(default=list, blank=True, editable=False)

    # Assignment (SPEC section 5), kept in step under the same row lock (ratinggame.game.assignment):
    # open game assignments holding one of the pair's 3..7 slots, and the pair's rank in the
    # serving order (NULL: takes no more raters). The default fits a new pair; tutorial and
    # probation pairs are never queried by rank.
    in_flight = models.PositiveIntegerField(default=0)
    assign_rank = models.PositiveSmallIntegerField(
        null=True, blank=True, choices=AssignRank.choices, default=AssignRank.FRESH
    )
    # Where the pair stands among the pairs of its rank (SPEC 5): each rater walks the keys from
    # a point of their own (ratinggame.game.assignment), so no two raters share an order.
    order_key = models.IntegerField(default=random_order_key, editable=False)

    # Taken out of the serving order after RATINGGAME["REPORTS_TO_WITHDRAW"] raters reported a
    # problem with it (ratinggame.game.reports); staff put it back or keep it out.
    withdrawn_at = models.DateTimeField(null=True, blank=True)

    priming_status = models.CharField(max_length=12, choices=PrimingStatus.choices, default=PrimingStatus.PENDING)
    priming_error = models.TextField(blank=True)
    priming_claimed_at = models.DateTimeField(null=True, blank=True)

    created_at = models.DateTimeField(auto_now_add=True)

    objects = CaptionPairQuerySet.as_manager()

    class Meta:
        ordering = ["pool", "display_order", "id"]
        constraints = [
            models.UniqueConstraint(fields=["image", "caption"], name="pair_unique_image_caption"),
            models.CheckConstraint(
                condition=Q(expert_rating__isnull=True) | Q(expert_rating__gte=1, expert_rating__lte=5),
                name="pair_expert_rating_1_5",
            ),
        ]
        indexes = [
            models.Index(fields=["pool", "human_count"], name="pair_pool_count_idx"),
            # The game's next-pair query: WHERE pool = 'game' AND assign_rank = r AND order_key
            # >= k ORDER BY order_key LIMIT 1 reads one entry of this index.
            models.Index(
                fields=["assign_rank", "order_key"],
                condition=Q(pool="game", assign_rank__isnull=False),
                name="pair_serving_order_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.pk} {self.caption[:60]}"


class AssignmentQuerySet(models.QuerySet):
    def open(self, now: datetime | None = None) -> "AssignmentQuerySet":
        """Served, not submitted, not expired."""
        return self.filter(submitted_at__isnull=True, expires_at__gt=now or timezone.now())

    def pairs_held_by(self, user) -> models.QuerySet:
        """Ids of the pairs ``user`` holds an open assignment for (a subquery).

        SPEC 5: while they do, they see neither the pair's consensus, nor its primes, nor its
        other ratings, whatever roles they also hold; every read of those excludes these pairs.
        """
        if not user.is_authenticated:
            return self.none().values("pair_id")
        return self.open().filter(rater=user).values("pair_id")


class Assignment(models.Model):
    """A pair served to a rater: who was shown what, and when (server time)."""

    # PROTECT (also on Rating): deleting a user must not delete the rows a pair's aggregates and
    # open slots count; a rater who leaves is deactivated instead.
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="assignments")
    pair = models.ForeignKey(CaptionPair, on_delete=models.PROTECT, related_name="assignments")
    stage = models.CharField(max_length=10, choices=Pool.choices)
    served_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    submitted_at = models.DateTimeField(null=True, blank=True)
    # True while this open game assignment holds one of its pair's slots (pair.in_flight);
    # cleared on submission or when it expires (ratinggame.game.assignment).
    holds_slot = models.BooleanField(default=False)
    # When the rater passed the pair without rating it ("Skip this pair", ratinggame.game.skips).
    skipped_at = models.DateTimeField(null=True, blank=True)

    objects = AssignmentQuerySet.as_manager()

    class Meta:
        ordering = ["id"]
        constraints = [
            # SPEC section 5: a rater never sees the same game pair twice.
            models.UniqueConstraint(fields=["rater", "pair"], condition=Q(stage="game"), name="assignment_game_once"),
        ]
        indexes = [
            models.Index(fields=["rater", "submitted_at"], name="assignment_open_idx"),
            # Expired assignments still holding a slot, for the release sweep.
            models.Index(fields=["expires_at"], condition=Q(holds_slot=True), name="assignment_slot_expiry_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.rater} <- pair {self.pair_id} ({self.stage})"


class ReportReason(models.TextChoices):
    BROKEN_IMAGE = "broken_image", "The image is broken or does not load"
    UNREADABLE_CAPTION = "unreadable_caption", "The caption is unreadable"
    OFFENSIVE = "offensive", "The image or the caption is offensive"
    OTHER = "other", "Something else (say what)"


class ReportOutcome(models.TextChoices):
    BACK_IN_PLAY = "back_in_play", "Put back in play"
    KEPT_OUT = "kept_out", "Kept out of play"


class PairReport(models.Model):
    """A rater's report of a problem with a pair (the pair is skipped in the game: no rating)."""

    pair = models.ForeignKey(CaptionPair, on_delete=models.CASCADE, related_name="reports")
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="pair_reports")
    stage = models.CharField(max_length=10, choices=Pool.choices)
    reason = models.CharField(max_length=20, choices=ReportReason.choices)
    text = models.TextField(blank=True)
    # True when the report also closed the rater's assignment of the pair (a game skip).
    skipped = models.BooleanField(default=False)
    created_at = models.DateTimeField()
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    outcome = models.CharField(max_length=20, choices=ReportOutcome.choices, blank=True)
    note = models.TextField(blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["rater", "pair"], name="pair_report_once_per_rater"),
        ]
        indexes = [
            models.Index(fields=["rater", "skipped", "created_at"], name="pair_report_skips_idx"),
            models.Index(fields=["pair"], condition=Q(resolved_at__isnull=True), name="pair_report_open_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.rater} reported pair {self.pair_id}: {self.reason}"


def game_ratings(prefix: str = "") -> Q:
    """Ratings made in the game, of game and control pairs alike (``GAME_STAGES``): the rater's
    game record. Only game pairs' ratings count toward a consensus (``counted_ratings``)."""
    return Q(**{f"{prefix}stage__in": GAME_STAGES})


def counted_ratings(prefix: str = "") -> Q:
    """The one definition of a rating that counts: a game rating not excluded (by a failed
    qualification window). Counted ratings make the consensus, the game scores, the statistics
    and the exports. ``prefix`` reaches them through a relation: ``counted_ratings("ratings__")``.
    """
    return Q(**{f"{prefix}stage": Pool.GAME, f"{prefix}excluded": False})


# ``counted_control_ratings(since=SINCE_GAME_ENTRY)``: each rating's rater's own last entry to the game
# (their sign-up, for a rater who has none).
SINCE_GAME_ENTRY = "rater__rater__game_entered_at"
_SIGN_UP = "rater__rater__created_at"


def counted_control_ratings(since: "datetime | str | None" = None) -> Q:
    """The one definition of the control ratings that count (SPEC 2.5): not excluded. With
    ``since``, those submitted since then: the drift rule reads a rater's since they last entered
    the game (a time, or ``SINCE_GAME_ENTRY`` for every rater's own; since their sign-up for a
    rater who has none). The game reads them in SQL, with every rating's assignment
    (``ratinggame.game.sql.assignment_with_pair``), which a test holds equal to this."""
    counted = Q(stage=Pool.CONTROL, excluded=False)
    if since == SINCE_GAME_ENTRY:
        return counted & Q(submitted_at__gte=Coalesce(models.F(since), models.F(_SIGN_UP)))
    return counted if since is None else counted & Q(submitted_at__gte=since)


class RatingQuerySet(models.QuerySet):
    def counted(self) -> "RatingQuerySet":
        """Ratings that count (``counted_ratings``)."""
        return self.filter(counted_ratings())

    def counted_controls(self, since: "datetime | str | None" = None) -> "RatingQuerySet":
        """Control ratings that count (``counted_control_ratings``)."""
        return self.filter(counted_control_ratings(since))

    def label_evidence(self, pair_ids: "list[int]") -> dict[int, list[float]]:
        """The ordinal model's evidence of each pair from these ratings (``counted()`` ones, for a
        pair's label), with every rater's model as it is now; a pair without ratings: empty."""
        evidence: dict[int, list[float]] = {pair_id: [] for pair_id in pair_ids}
        rows = (
            self.filter(pair_id__in=list(evidence))
            .order_by("id")
            .values_list(
                "pair_id", "value", *(f"rater__rater__label_{name}" for name in ("precision", "severity", "lapse"))
            )
        )
        for pair_id, value, precision, severity, lapse in rows.iterator(chunk_size=5000):
            rater = None if precision is None else ordinal.RaterModel(precision, severity or 0.0, lapse or 0.0)
            evidence[pair_id] = ordinal.evidence_add(evidence[pair_id], value, rater)
        return evidence


class Rating(models.Model):
    assignment = models.OneToOneField(Assignment, on_delete=models.PROTECT, related_name="rating")
    pair = models.ForeignKey(CaptionPair, on_delete=models.PROTECT, related_name="ratings")
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="ratings")
    stage = models.CharField(max_length=10, choices=Pool.choices)
    value = models.PositiveSmallIntegerField()
    served_at = models.DateTimeField()
    submitted_at = models.DateTimeField()
    points = models.SmallIntegerField(default=0)
    # What the rater was shown: the expert rating (tutorial/probation) or the consensus
    # (game; empty for the first rater of a pair), and the rest of the feedback (running
    # total, qualification window, transition), so a repeated submission shows the same.
    reference = models.PositiveSmallIntegerField(null=True, blank=True)
    feedback = models.JSONField(default=dict, blank=True)
    excluded = models.BooleanField(default=False)
    excluded_reason = models.CharField(max_length=200, blank=True)

    objects = RatingQuerySet.as_manager()

    class Meta:
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(condition=Q(value__gte=1, value__lte=5), name="rating_value_1_5"),
        ]
        indexes = [
            models.Index(fields=["pair", "excluded"], name="rating_pair_idx"),
            models.Index(fields=["rater", "stage", "submitted_at"], name="rating_rater_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.rater} rated pair {self.pair_id}: {self.value}"

    @property
    def seconds_spent(self) -> float:
        return (self.submitted_at - self.served_at).total_seconds()


class TrackedJob(models.Model):
    """What every job run in the background and followed by its page has (exports, imports,
    competency analyses): who started it and when, its status and progress (``ratinggame.background.TrackedJobs`` moves
    them), its parameters and, when it failed, why."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    # When a worker claimed it: a running job is taken as lost this long after it started, not
    # after it was queued (it may wait in the queue behind other work).
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    progress = models.FloatField(default=0.0)
    progress_message = models.CharField(max_length=200, blank=True)
    params = models.JSONField(default=dict)
    error = models.TextField(blank=True)

    class Meta:
        abstract = True


class ImportJob(TrackedJob):
    """A manifest import run as a tracked job (``ratinggame.pairs.jobs``): the command's importer,
    all or nothing, with its progress, its report and the rows it refused. ``params``: pool,
    dry_run, skip_invalid, the manifest's name and its number of rows."""

    # The uploaded files while the job waits or runs (under MEDIA_ROOT; removed at the end).
    folder = models.CharField(max_length=200, blank=True)
    # ImportReport's counts and pair ids once the importer ran; the refused rows as
    # [{"row": line number, "reason": "..."}] (all of them stop the import unless skip_invalid).
    report = models.JSONField(default=dict, blank=True)
    row_errors = models.JSONField(default=list, blank=True)
    # Written by the running job every IMPORT_HEARTBEAT_SECONDS: a running job without one for
    # longer than the sweep's period lost its worker (ratinggame.pairs.jobs.import_jobs_sweep).
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"import {self.pk} ({self.status})"


class Session(AbstractBaseSession):
    """A browser session that names its signed-in user (Django's database sessions name nobody):
    the rating page's one request reads the session, its user, their roles and their profile in
    one query (``ratinggame.game.sql.rater_by_session``). The session engine is
    ``ratinggame.sessions``; the data stays Django's, signed and verified as Django does."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )

    @classmethod
    def get_session_store_class(cls):
        from ratinggame.sessions import SessionStore

        return SessionStore
