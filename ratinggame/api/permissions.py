"""Who may call what: one permission class per role (annotators.roles)."""

from rest_framework.permissions import BasePermission

from annotators.roles import is_admin, is_annotator, is_researcher


class IsAnnotator(BasePermission):
    """Annotators (and admins) play the game."""

    message = "Only annotators can play the game. Sign up as a rater to play."

    def has_permission(self, request, view) -> bool:
        return is_annotator(request.user)


class IsResearcher(BasePermission):
    """Researchers (and admins) read pairs and ratings, upload manifests and export."""

    message = "Only researchers can use this endpoint."

    def has_permission(self, request, view) -> bool:
        return is_researcher(request.user)


class IsAdminRole(BasePermission):
    """Admins (the admin role, staff or superusers) see rater statistics and act on raters."""

    message = "Only admins can use this endpoint."

    def has_permission(self, request, view) -> bool:
        return is_admin(request.user)
