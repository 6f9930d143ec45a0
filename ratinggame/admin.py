"""The Django admin of the game's models.

Images and pairs are added and edited through the importer's rules and services; once a pair
has a rating (or is on a rater's screen), what raters were shown of it and its pool are
read-only (``ratinggame.pairs.services.PAIR_CONTENT_FIELDS``). Assignments
and ratings are read-only: every change to them moves a pair's consensus aggregates and open
slots, which only the game's services keep in step under the pair's row lock (ratings are
excluded by a failed qualification window, never by hand; ``manage.py check_aggregates``
reports and repairs any drift).
"""

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.utils.html import format_html, format_html_join
from django.utils.text import Truncator

from annotators.roles import ReadOnlyAdmin
from ratinggame.models import Assignment, CaptionPair, Image, ImportJob, Rating
from ratinggame.pairs.derivatives import display_image
from ratinggame.pairs.images import ImageRejected, check_image_bytes, read_limited
from ratinggame.pairs.services import (
    PAIR_CONTENT_FIELDS,
    image_store,
    pair_content_frozen,
    pair_create,
    pair_pool_changed,
    pairs_created,
    pairs_priming_retry,
)
from ratinggame.pairs.validation import (
    PairInvalid,
    check_expert_fields,
    clean_caption,
    clean_expert_rating,
    clean_references,
)
from scoring.priming.registry import metric_label


def thumbnail(image: Image | None, size: int = 80) -> str:
    """A preview from the image's display copies (the 160-px one in lists; the original until
    they are made), scaled to fit ``size`` pixels by its width and height attributes (the
    Content-Security-Policy refuses inline style attributes), upright as the copies are."""
    if image is None or not image.file:
        return "-"
    shown = display_image(image)
    scale = min(1.0, size / max(shown.width, shown.height, 1))
    width, height = max(1, round(shown.width * scale)), max(1, round(shown.height * scale))
    return format_html(
        '<img src="{}" alt="{}" width="{}" height="{}" loading="lazy">',
        shown.thumb if size <= 160 else shown.src,
        image,
        width,
        height,
    )


class ImageUploadForm(forms.ModelForm):
    """Admin upload: the same checks as the importer (ratinggame.pairs.images)."""

    upload = forms.FileField(label="Image file")

    class Meta:
        model = Image
        fields = ["source"]

    def clean_upload(self):
        upload = self.cleaned_data["upload"]
        try:
            checked = check_image_bytes(read_limited(upload))
        except ImageRejected as exc:
            raise ValidationError(f"{upload.name}: {exc}") from None
        existing = Image.objects.filter(sha256=checked.sha256).first()
        if existing is not None:
            raise ValidationError(f"{upload.name}: this image is already stored as image #{existing.pk}")
        self.checked = checked
        return upload


@admin.register(Image)
class ImageAdmin(admin.ModelAdmin):
    list_display = ["id", "preview", "original_name", "width", "height", "source", "created_at"]
    search_fields = ["original_name", "sha256", "source"]
    list_filter = ["created_at"]
    readonly_fields = ["preview_large", "sha256", "width", "height", "original_name", "file"]

    def get_form(self, request, obj=None, **kwargs):
        if obj is None:
            kwargs["form"] = ImageUploadForm
        return super().get_form(request, obj, **kwargs)

    def get_fields(self, request, obj=None):
        if obj is None:
            return ["upload", "source"]
        return ["preview_large", "file", "original_name", "sha256", "width", "height", "source"]

    def save_model(self, request, obj, form, change):
        if change:
            return super().save_model(request, obj, form, change)
        upload = form.cleaned_data["upload"]
        stored, _ = image_store(checked=form.checked, original_name=upload.name, source=form.cleaned_data["source"])
        obj.pk = stored.pk
        obj.__dict__.update(stored.__dict__)

    @admin.display(description="Image")
    def preview(self, obj):
        return thumbnail(obj)

    @admin.display(description="Preview")
    def preview_large(self, obj):
        return thumbnail(obj, 400)


def _scores(prime) -> tuple[str, str]:
    return f"{prime.raw_score:.4f}", f"{prime.value:.2f}"


class CaptionPairForm(forms.ModelForm):
    # No min/max on the field itself: the range is checked by the importer's rule
    # (clean_expert_rating), so the admin gives the same "outside 1-5" message, not the
    # model field's bounds or the database constraint's name.
    expert_rating = forms.IntegerField(
        required=False, help_text="1-5; required for tutorial, probation and guide pairs."
    )

    class Meta:
        model = CaptionPair
        fields = ["image", "caption", "source", "pool", "references", "expert_rating", "explanation", "display_order"]

    def clean_expert_rating(self):
        try:
            return clean_expert_rating(self.cleaned_data.get("expert_rating"))
        except PairInvalid as exc:
            raise ValidationError(str(exc)) from None

    def clean(self):
        data = super().clean()
        # The fields a rated pair shows read-only are not in the form: the stored values stand.
        pool = data.get("pool", self.instance.pool if self.instance.pk else "")
        try:
            if "caption" in data:
                data["caption"] = clean_caption(data["caption"])
            if "references" in self.fields:
                data["references"] = clean_references(data.get("references"))
            check_expert_fields(pool, data.get("expert_rating"), data.get("explanation", ""))
        except PairInvalid as exc:
            raise ValidationError(str(exc)) from None
        changed = [field for field in PAIR_CONTENT_FIELDS if field in self.changed_data]
        # A rating (or a serve) that came after the page showed the form: checked again under
        # the pair's row lock, held until the admin's transaction saves.
        if self.instance.pk and changed and pair_content_frozen(pair_id=self.instance.pk, lock=True):
            raise ValidationError(
                "A rater has rated this pair (or is rating it now) since this page was opened: its "
                f"{', '.join(changed)} can no longer change. Withdraw it from play instead."
            )
        return data


@admin.register(CaptionPair)
class CaptionPairAdmin(admin.ModelAdmin):
    form = CaptionPairForm
    list_display = ["id", "preview", "caption", "source", "pool", "expert_rating", "human_count", "priming"]
    list_filter = ["pool", "source", "priming_status", "expert_rating"]
    actions = ["retry_priming"]
    search_fields = ["caption", "image__original_name", "image__sha256"]
    list_select_related = ["image"]
    autocomplete_fields = ["image"]
    readonly_fields = [
        "human_count",
        "human_sum",
        "human_sumsq",
        "in_flight",
        "assign_rank",
        "primes",
        "model_primes",
        "priming_status",
        "priming_error",
    ]

    def get_queryset(self, request):
        # SPEC 5: not the pair a staff member is rating right now (its consensus and primes).
        return super().get_queryset(request).exclude(pk__in=Assignment.objects.pairs_held_by(request.user))

    def get_readonly_fields(self, request, obj=None):
        readonly = list(super().get_readonly_fields(request, obj))
        if obj is not None and pair_content_frozen(pair_id=obj.pk):
            readonly += PAIR_CONTENT_FIELDS
        return readonly

    def save_model(self, request, obj, form, change):
        if change:
            # Only the fields the form holds: the consensus aggregates, slots and primes are kept
            # by the game and the priming worker under row locks, the values this form loaded
            # may already be stale, and a rated pair's content is not in the form at all.
            obj.save(update_fields=[field for field in CaptionPairForm.Meta.fields if field in form.fields])
            if "pool" in form.changed_data and (note := pair_pool_changed(pair_id=obj.pk)):
                self.message_user(request, f"Priming: {note}.", messages.WARNING)
            return
        # The importer's service: same priming status (not needed outside the game), same queueing.
        pair = pair_create(**{field: form.cleaned_data[field] for field in CaptionPairForm.Meta.fields})
        obj.pk = pair.pk
        obj.__dict__.update(pair.__dict__)
        if note := pairs_created([pair.pk]):
            self.message_user(request, f"Priming: {note}.", messages.WARNING)

    @admin.display(description="Image")
    def preview(self, obj):
        return thumbnail(obj.image, 60)

    @admin.display(description="Model primes")
    def model_primes(self, obj):
        """Each prime's model, scores and, for FLEUR when it was asked, the model's explanation."""
        primes = list(obj.model_ratings.order_by("slot")) if obj.pk else []
        if not primes:
            return "-"
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}<br><small>{}</small></td><td>{}</td><td>{}</td><td>{}</td></tr>",
            ((p.slot, metric_label(p.metric), p.model_identity, *_scores(p), p.explanation) for p in primes),
        )
        return format_html(
            "<table><thead><tr><th>Slot</th><th>Model</th><th>Raw score</th><th>Rating</th><th>Explanation</th>"
            "</tr></thead><tbody>{}</tbody></table>",
            rows,
        )

    @admin.display(description="Priming", ordering="priming_status")
    def priming(self, obj):
        status = obj.get_priming_status_display()
        if not obj.priming_error:
            return status
        error = Truncator(obj.priming_error).chars(90)
        return format_html('{}<br><small title="{}">{}</small>', status, obj.priming_error, error)

    @admin.action(description="Retry priming of the selected failed (or waiting) game pairs")
    def retry_priming(self, request, queryset):
        selected = list(queryset.values_list("pk", flat=True))
        queued, note = pairs_priming_retry(pair_ids=selected)
        left = len(selected) - queued
        message = f"{queued} pair(s) queued for priming."
        if left:
            message += f" {left} left alone (already primed or running, or not game pairs)."
        if note:
            message += f" {note}."
        self.message_user(request, message, messages.SUCCESS if queued else messages.WARNING)


@admin.register(Assignment)
class AssignmentAdmin(ReadOnlyAdmin):
    list_display = ["id", "rater", "pair", "stage", "served_at", "submitted_at", "holds_slot"]
    list_filter = ["stage"]
    search_fields = ["rater__username"]


@admin.register(Rating)
class RatingAdmin(ReadOnlyAdmin):
    list_display = ["id", "rater", "pair", "stage", "value", "points", "excluded", "submitted_at"]
    list_filter = ["stage", "excluded", "value"]
    search_fields = ["rater__username", "pair__caption"]

    def get_queryset(self, request):
        # SPEC 5: not the ratings of the pair a staff member is rating right now.
        return super().get_queryset(request).exclude(pair_id__in=Assignment.objects.pairs_held_by(request.user))


@admin.register(ImportJob)
class ImportJobAdmin(ReadOnlyAdmin):
    list_display = ["id", "status", "created_by", "created_at", "finished_at", "progress_message"]
    list_filter = ["status"]
