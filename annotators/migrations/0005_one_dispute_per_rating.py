from django.conf import settings
from django.db import migrations, models
from django.db.models import Count

# Which of a rating's duplicate disputes stays: an accepted one, else a rejected one, else the
# first filed.
_KEEP_ORDER = {"accepted": 0, "rejected": 1, "open": 2}


def merge_duplicate_disputes(apps, schema_editor):
    """Disputes filed twice on one rating (parallel posts, before the constraint) become one.

    The comments of the others are kept in it, and so is the total of points they restored,
    so that a later acceptance can never restore more than the rating lost. Points restored
    more than once before this migration are not taken back from the rater's score: that is a
    staff decision (the action log names every acceptance).
    """
    Dispute = apps.get_model("annotators", "Dispute")
    duplicated = (
        Dispute.objects.values("rating_id").annotate(n=Count("id")).filter(n__gt=1).values_list("rating_id", flat=True)
    )
    for rating_id in list(duplicated):
        disputes = sorted(Dispute.objects.filter(rating_id=rating_id), key=lambda d: (_KEEP_ORDER[d.status], d.pk))
        kept, others = disputes[0], disputes[1:]
        comments = list(dict.fromkeys([kept.comment, *(d.comment for d in others)]))
        kept.comment = "\n\n".join(comments)
        kept.points_restored = sum(d.points_restored for d in disputes)
        kept.save(update_fields=["comment", "points_restored"])
        Dispute.objects.filter(pk__in=[d.pk for d in others]).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("annotators", "0004_competency_rater_quality"),
        ("ratinggame", "0004_integrity"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RunPython(merge_duplicate_disputes, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="dispute",
            constraint=models.UniqueConstraint(fields=("rating",), name="dispute_one_per_rating"),
        ),
    ]
