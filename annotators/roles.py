"""The three roles (SPEC: annotators play, researchers export, admins monitor) as Django groups."""

from django.contrib.auth.models import Group

ANNOTATOR = "annotator"
RESEARCHER = "researcher"
ADMIN = "admin"
ROLES = (ANNOTATOR, RESEARCHER, ADMIN)


def ensure_roles() -> dict[str, Group]:
    return {name: Group.objects.get_or_create(name=name)[0] for name in ROLES}


def has_role(user, role: str) -> bool:
    if not user.is_authenticated:
        return False
    if user.is_superuser:
        return True
    return user.groups.filter(name=role).exists()


def is_admin(user) -> bool:
    """Admins monitor raters: the admin role, staff members and superusers."""
    return user.is_authenticated and (user.is_staff or has_role(user, ADMIN))


def is_researcher(user) -> bool:
    """Researchers read pairs and ratings and export the dataset; admins may too."""
    return is_admin(user) or has_role(user, RESEARCHER)


def is_annotator(user) -> bool:
    """Annotators play the game; admins may too (to try it). Researchers do not rate."""
    return is_admin(user) or has_role(user, ANNOTATOR)
