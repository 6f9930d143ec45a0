"""The three roles as groups with model permissions (annotators.roles names them).

* annotator: rates pairs and disputes scores (the game API checks the role itself).
* researcher: reads images, pairs and ratings, adds pairs and images (manifest uploads), reads
  the scoring tables and starts exports.
* admin: every permission of the site's apps, users, groups and tokens, and the admin log.
  Admins who use the Django admin site also need ``is_staff``.

The table is frozen here, as a migration must be: a later model needs its own data migration
to give the roles permissions on it.
"""

from django.db import migrations
from django.db.models import Q

ROLE_PERMISSIONS = {
    "annotator": ["ratinggame.add_rating", "annotators.add_dispute"],
    "researcher": [
        "ratinggame.view_image",
        "ratinggame.add_image",
        "ratinggame.view_captionpair",
        "ratinggame.add_captionpair",
        "ratinggame.view_rating",
        "scoring.view_calibration",
        "scoring.view_modelrating",
        "scoring.view_predictorrun",
        "scoring.view_exportjob",
        "scoring.add_exportjob",
    ],
}
# Admins: all permissions of these apps.
ADMIN_APPS = ("ratinggame", "annotators", "scoring", "auth", "authtoken", "admin")


def _permissions_create(apps, schema_editor) -> None:
    """Django creates permissions after all migrations ran; this migration needs them now."""
    from django.contrib.auth.management import create_permissions

    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, verbosity=0, apps=apps, using=schema_editor.connection.alias)
        app_config.models_module = None


def roles_create(apps, schema_editor) -> None:
    _permissions_create(apps, schema_editor)
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for role, names in ROLE_PERMISSIONS.items():
        query = Q(pk__in=[])
        for name in names:
            app_label, codename = name.split(".")
            query |= Q(content_type__app_label=app_label, codename=codename)
        group, _ = Group.objects.get_or_create(name=role)
        group.permissions.add(*Permission.objects.filter(query))
    admin, _ = Group.objects.get_or_create(name="admin")
    admin.permissions.add(*Permission.objects.filter(content_type__app_label__in=ADMIN_APPS))


def roles_permissions_remove(apps, schema_editor) -> None:
    # The groups stay (users belong to them; annotators.roles.ensure_roles recreates them anyway).
    Group = apps.get_model("auth", "Group")
    for group in Group.objects.filter(name__in=["annotator", "researcher", "admin"]):
        group.permissions.clear()


class Migration(migrations.Migration):
    dependencies = [
        ("annotators", "0002_competency"),
        ("ratinggame", "0002_journey"),
        ("scoring", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("authtoken", "0004_alter_tokenproxy_options"),
        ("admin", "0003_logentry_add_action_flag_choices"),
    ]

    operations = [migrations.RunPython(roles_create, roles_permissions_remove)]
