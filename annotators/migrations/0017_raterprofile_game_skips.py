"""Each rater's count of "Skip this pair" on their profile, counted from their skipped game
assignments (game and control pairs) for the raters who skipped before it."""

from django.db import migrations, models
from django.db.models import Count, OuterRef, Subquery


def count_skips(apps, schema_editor):
    RaterProfile = apps.get_model("annotators", "RaterProfile")
    Assignment = apps.get_model("ratinggame", "Assignment")
    skipped = (
        Assignment.objects.filter(rater_id=OuterRef("user_id"), stage__in=["game", "control"], skipped_at__isnull=False)
        .values("rater_id")
        .annotate(n=Count("id"))
        .values("n")
    )
    RaterProfile.objects.update(game_skips=models.functions.Coalesce(Subquery(skipped), 0))


class Migration(migrations.Migration):
    dependencies = [
        ("annotators", "0016_rater_label_model"),
        ("ratinggame", "0012_attention_checks"),
    ]

    operations = [
        migrations.AddField(
            model_name="raterprofile",
            name="game_skips",
            field=models.PositiveIntegerField(default=0, editable=False),
        ),
        migrations.RunPython(count_skips, migrations.RunPython.noop, elidable=True),
    ]
