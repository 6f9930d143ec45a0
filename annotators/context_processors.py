"""Template context: which role-specific navigation a user sees (the pages check again), and the
study's settings (title, who runs it, whether it is closed) for every page."""

from annotators.roles import is_admin, is_researcher
from annotators.study.settings import study as study_settings


def roles(request) -> dict:
    user = request.user
    return {"nav_is_researcher": is_researcher(user), "nav_is_admin": is_admin(user)}


def study(request) -> dict:
    current = study_settings()
    return {"study": current, "study_closed": current.is_closed()}
