from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.utils.html import format_html

from ratinggame.images import ImageRejected, check_image_bytes, read_limited
from ratinggame.models import Assignment, CaptionPair, Image, Rating
from ratinggame.services import image_store, pairs_created
from ratinggame.validation import (
    PairInvalid,
    check_expert_fields,
    clean_caption,
    clean_references,
)


def thumbnail(image: Image | None, size: int = 80) -> str:
    if image is None or not image.file:
        return "-"
    return format_html(
        '<img src="{}" alt="{}" style="max-width:{}px;max-height:{}px">', image.file.url, image, size, size
    )


class ImageUploadForm(forms.ModelForm):
    """Admin upload: the same checks as the importer (ratinggame.images)."""

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


class CaptionPairForm(forms.ModelForm):
    class Meta:
        model = CaptionPair
        fields = ["image", "caption", "source", "pool", "references", "expert_rating", "explanation", "display_order"]

    def clean(self):
        data = super().clean()
        try:
            if "caption" in data:
                data["caption"] = clean_caption(data["caption"])
            data["references"] = clean_references(data.get("references"))
            check_expert_fields(data.get("pool", ""), data.get("expert_rating"), data.get("explanation", ""))
        except PairInvalid as exc:
            raise ValidationError(str(exc)) from None
        return data


@admin.register(CaptionPair)
class CaptionPairAdmin(admin.ModelAdmin):
    form = CaptionPairForm
    list_display = ["id", "preview", "caption", "source", "pool", "expert_rating", "human_count", "priming_status"]
    list_filter = ["pool", "source", "priming_status", "expert_rating"]
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
        "priming_status",
        "priming_error",
    ]

    def save_model(self, request, obj, form, change):
        if change:
            # Only the form's own fields: the consensus aggregates, slots and primes are kept
            # by the game and the priming worker under row locks, and the values this form
            # loaded may already be stale.
            obj.save(update_fields=CaptionPairForm.Meta.fields)
            return
        super().save_model(request, obj, form, change)
        pairs_created([obj.pk])

    @admin.display(description="Image")
    def preview(self, obj):
        return thumbnail(obj.image, 60)


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ["id", "rater", "pair", "stage", "served_at", "submitted_at"]
    list_filter = ["stage"]
    search_fields = ["rater__username"]
    raw_id_fields = ["rater", "pair"]


@admin.register(Rating)
class RatingAdmin(admin.ModelAdmin):
    list_display = ["id", "rater", "pair", "stage", "value", "points", "excluded", "submitted_at"]
    list_filter = ["stage", "excluded", "value"]
    search_fields = ["rater__username", "pair__caption"]
    raw_id_fields = ["assignment", "pair", "rater"]
