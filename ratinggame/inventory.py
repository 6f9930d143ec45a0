"""What the site holds, counted (``manage.py site_inventory``): the check that a backup restored
whole, and that nothing was lost on the way. Every figure is a count or a sum over whole tables, so
two databases holding the same rows give the same inventory whatever their ids' order."""

from django.db.models import Count, Sum

from annotators.models import BonusBatch, BonusState, Dispute, Participation, RaterProfile
from ratinggame.models import Assignment, CaptionPair, Image, Rating
from scoring.models import ModelRating


def site_inventory() -> dict:
    images = list(Image.objects.values_list("file", flat=True))
    storage = Image._meta.get_field("file").storage
    ratings = Rating.objects.aggregate(count=Count("id"), values=Sum("value"), points=Sum("points"))
    paid = BonusBatch.objects.filter(state=BonusState.PAID).aggregate(total=Sum("total"))["total"]
    return {
        "pairs": dict(CaptionPair.objects.values_list("pool").annotate(n=Count("id")).order_by("pool")),
        "ratings": {
            **{key: value or 0 for key, value in ratings.items()},
            "excluded": Rating.objects.filter(excluded=True).count(),
            "by_stage": dict(Rating.objects.values_list("stage").annotate(n=Count("id")).order_by("stage")),
        },
        "assignments": Assignment.objects.count(),
        "model_ratings": ModelRating.objects.count(),
        "raters": RaterProfile.objects.count(),
        "participants": Participation.objects.count(),
        "disputes": Dispute.objects.count(),
        "bonus_batches": {
            "count": BonusBatch.objects.count(),
            "paid_total": str(paid or 0),
        },
        "images": {"count": len(images), "files_missing": sum(not storage.exists(name) for name in images)},
    }
