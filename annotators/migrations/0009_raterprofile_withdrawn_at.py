"""When a rater withdrew from the study, on their profile (RaterProfile.objects.raters() leaves them
out). Raters who withdrew before get the time of their withdrawal from the staff action log."""

from django.db import migrations, models
from django.db.models import OuterRef, Subquery


def from_action_log(apps, schema_editor) -> None:
    RaterProfile = apps.get_model("annotators", "RaterProfile")
    RaterAction = apps.get_model("annotators", "RaterAction")
    withdrawals = RaterAction.objects.filter(rater=OuterRef("pk"), action="withdraw").order_by("created_at")
    RaterProfile.objects.filter(actions__action="withdraw").update(
        withdrawn_at=Subquery(withdrawals.values("created_at")[:1])
    )


class Migration(migrations.Migration):
    dependencies = [
        ("annotators", "0008_competency_analysis_tracked_job"),
    ]

    operations = [
        migrations.AddField(
            model_name="raterprofile",
            name="withdrawn_at",
            field=models.DateTimeField(blank=True, editable=False, null=True),
        ),
        migrations.RunPython(from_action_log, migrations.RunPython.noop),
    ]
