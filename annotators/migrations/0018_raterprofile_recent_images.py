"""The images of each rater's latest game serves on their profile, which the next serve keeps
away from (SPEC 5): the image of their latest serve on the game screen, for the raters served
before it."""

from django.db import migrations, models
from django.db.models import OuterRef, Subquery


def latest_images(apps, schema_editor):
    RaterProfile = apps.get_model("annotators", "RaterProfile")
    Assignment = apps.get_model("ratinggame", "Assignment")
    latest = Assignment.objects.filter(
        rater_id=OuterRef("user_id"), stage__in=["game", "control", "attention"]
    ).order_by("-id")
    served = RaterProfile.objects.annotate(image=Subquery(latest.values("pair__image_id")[:1]))
    changed = []
    for profile in served.filter(image__isnull=False).only("id").iterator(chunk_size=2000):
        profile.recent_images = [profile.image]
        changed.append(profile)
    RaterProfile.objects.bulk_update(changed, ["recent_images"], batch_size=2000)


class Migration(migrations.Migration):
    dependencies = [
        ("annotators", "0017_raterprofile_game_skips"),
        ("ratinggame", "0014_refit_follows_ratings"),
    ]

    operations = [
        migrations.AddField(
            model_name="raterprofile",
            name="recent_images",
            field=models.JSONField(default=list, editable=False),
        ),
        migrations.RunPython(latest_images, migrations.RunPython.noop, elidable=True),
    ]
