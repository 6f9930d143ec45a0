"""A leaderboard pseudonym is unique whatever its case. Pseudonyms chosen before that could be
copies: the oldest profile keeps the name, each later copy is cleared (its rater appears as the
anonymous name until they choose another)."""

import django.db.models.functions.text
from django.conf import settings
from django.db import migrations, models


def clear_copied_pseudonyms(apps, schema_editor):
    RaterProfile = apps.get_model("annotators", "RaterProfile")
    seen = set()
    copies = []
    for pk, name in RaterProfile.objects.exclude(display_name="").order_by("id").values_list("id", "display_name"):
        key = name.lower()
        if key in seen:
            copies.append(pk)
        seen.add(key)
    RaterProfile.objects.filter(pk__in=copies).update(display_name="")


class Migration(migrations.Migration):
    dependencies = [
        ("annotators", "0011_participation_session_outcome"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RunPython(clear_copied_pseudonyms, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="raterprofile",
            constraint=models.UniqueConstraint(
                django.db.models.functions.text.Lower("display_name"),
                condition=models.Q(("display_name", ""), _negated=True),
                name="profile_display_name_unique_ci",
                violation_error_message="Another rater uses this pseudonym already: choose another one.",
            ),
        ),
    ]
