import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

# A competency analysis becomes a tracked job like imports and exports: who asked for it is
# ``created_by`` (the same column content, renamed), and a waiting analysis is "queued". Also the
# tutorial score's help text, which stated the journey's maximum (the tutorial may be shorter).
_STATUS_RENAMED = {"pending": "queued"}


def statuses_forward(apps, schema_editor):
    analyses = apps.get_model("annotators", "CompetencyAnalysis")
    for old, new in _STATUS_RENAMED.items():
        analyses.objects.filter(status=old).update(status=new)


def statuses_backward(apps, schema_editor):
    analyses = apps.get_model("annotators", "CompetencyAnalysis")
    for old, new in _STATUS_RENAMED.items():
        analyses.objects.filter(status=new).update(status=old)


class Migration(migrations.Migration):
    dependencies = [
        ("annotators", "0007_quality_control"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RenameField(model_name="competencyanalysis", old_name="requested_by", new_name="created_by"),
        migrations.AlterField(
            model_name="competencyanalysis",
            name="created_by",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AddField(
            model_name="competencyanalysis",
            name="params",
            field=models.JSONField(default=dict),
        ),
        migrations.AddField(
            model_name="competencyanalysis",
            name="progress",
            field=models.FloatField(default=0.0),
        ),
        migrations.AddField(
            model_name="competencyanalysis",
            name="progress_message",
            field=models.CharField(blank=True, max_length=200),
        ),
        migrations.AlterField(
            model_name="competencyanalysis",
            name="status",
            field=models.CharField(
                choices=[("queued", "Queued"), ("running", "Running"), ("done", "Done"), ("failed", "Failed")],
                default="queued",
                max_length=10,
            ),
        ),
        migrations.RunPython(statuses_forward, statuses_backward),
        migrations.AlterField(
            model_name="raterprofile",
            name="tutorial_score",
            field=models.SmallIntegerField(
                blank=True, help_text="The tutorial's points: the training score.", null=True
            ),
        ),
    ]
