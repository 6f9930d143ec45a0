"""The three roles (SPEC: annotators play, researchers export, admins monitor) as Django groups,
the decorators of the pages each role may open, and the admin of rows no one may edit by hand."""

import functools
from collections.abc import Callable

from django.contrib import admin
from django.contrib.auth.models import Group
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.db.models import Exists, Model, OuterRef
from django.http import HttpRequest, HttpResponse

ANNOTATOR = "annotator"
RESEARCHER = "researcher"
ADMIN = "admin"
ROLES = (ANNOTATOR, RESEARCHER, ADMIN)


def ensure_roles() -> dict[str, Group]:
    return {name: Group.objects.get_or_create(name=name)[0] for name in ROLES}


def role_names(user) -> frozenset[str]:
    """The roles among the user's groups: one query, then kept on the user object.

    Every page and API call asks (often twice: "annotator or admin?"); the user object lives
    for one request, and a change of groups shows from the next request on.
    """
    cached = getattr(user, "_role_names", None)
    if cached is None:
        cached = frozenset(user.groups.filter(name__in=ROLES).values_list("name", flat=True))
        user._role_names = cached
    return cached


@functools.cache
def role_annotations(user_field: str) -> dict[str, Exists]:
    """Annotations that read the roles of the user in ``user_field`` within the query that loads
    that user (the API's token authentication): no query of its own, and never stale. Built once
    (``annotate`` copies what it is given); not to be changed by the caller."""
    return {_role_flag(name): Exists(Group.objects.filter(user=OuterRef(user_field), name=name)) for name in ROLES}


def role_names_keep(user, row: Model) -> None:
    """Keep on ``user`` the roles read by ``role_annotations`` on ``row``, as ``role_names`` would."""
    user._role_names = frozenset(name for name in ROLES if getattr(row, _role_flag(name)))


def _role_flag(role: str) -> str:
    return f"has_role_{role}"


def has_role(user, role: str) -> bool:
    if not user.is_authenticated:
        return False
    if user.is_superuser:
        return True
    return role in role_names(user)


def is_admin(user) -> bool:
    """Admins monitor raters: the admin role, staff members and superusers."""
    return user.is_authenticated and (user.is_staff or has_role(user, ADMIN))


def is_researcher(user) -> bool:
    """Researchers read pairs and ratings and export the dataset; admins may too."""
    return is_admin(user) or has_role(user, RESEARCHER)


def is_annotator(user) -> bool:
    """Annotators play the game; admins may too (to try it). Researchers do not rate."""
    return is_admin(user) or has_role(user, ANNOTATOR)


View = Callable[..., HttpResponse]


def _page_for(allowed: Callable[[object], bool], refusal: str) -> Callable[[View], View]:
    """A decorator: anonymous visitors go to the log-in page, users ``allowed`` refuses get 403."""

    def decorator(view: View) -> View:
        @functools.wraps(view)
        def checked(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            if not allowed(request.user):
                raise PermissionDenied(refusal)
            return view(request, *args, **kwargs)

        return checked

    return decorator


# The staff pages (raters, disputes, competency, pair reports): admins (``is_admin``).
staff_required = _page_for(is_admin, "Staff only.")
# The research pages (imports, exports): researchers and admins (``is_researcher``).
researcher_required = _page_for(is_researcher, "Researchers only.")


class ReadOnlyAdmin(admin.ModelAdmin):
    """A model shown in the admin to read and search only: rows that services alone write."""

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
