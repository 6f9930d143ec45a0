"""Template context: which role-specific navigation a user sees (the pages check again)."""

from annotators.roles import is_admin, is_researcher


def roles(request) -> dict:
    user = request.user
    return {"nav_is_researcher": is_researcher(user), "nav_is_admin": is_admin(user)}
