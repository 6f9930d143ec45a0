"""The roles' permissions on import jobs (ratinggame.ImportJob): researchers start and follow
them, admins have every permission on them (as on every model of the site's apps)."""

from django.db import migrations

PERMISSIONS = {
    "researcher": ["view_importjob", "add_importjob"],
    "admin": ["view_importjob", "add_importjob", "change_importjob", "delete_importjob"],
}


def grant(apps, schema_editor) -> None:
    from django.contrib.auth.management import create_permissions

    # Django creates permissions after all migrations ran; this migration needs them now.
    config = apps.get_app_config("ratinggame")
    config.models_module = True
    create_permissions(config, verbosity=0, apps=apps, using=schema_editor.connection.alias)
    config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for role, codenames in PERMISSIONS.items():
        group, _ = Group.objects.get_or_create(name=role)
        group.permissions.add(*Permission.objects.filter(content_type__app_label="ratinggame", codename__in=codenames))


def revoke(apps, schema_editor) -> None:
    Permission = apps.get_model("auth", "Permission")
    for permission in Permission.objects.filter(content_type__app_label="ratinggame", codename__endswith="_importjob"):
        permission.group_set.clear()


class Migration(migrations.Migration):
    dependencies = [
        ("annotators", "0005_one_dispute_per_rating"),
        ("ratinggame", "0005_image_storage_import_jobs"),
    ]

    operations = [migrations.RunPython(grant, revoke)]
