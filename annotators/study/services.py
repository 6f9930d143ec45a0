"""Writes of the study's life: a participant entering through a platform link, and the end of a
session (completion or screen-out)."""

import secrets
from datetime import datetime

from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.db import IntegrityError, transaction

from annotators.models import Participation, RaterProfile
from annotators.roles import ANNOTATOR, ensure_roles
from annotators.study.entry import EntryLink, EntryRefused
from annotators.study.settings import study


def participant_enter(*, link: EntryLink, now: datetime) -> tuple[AbstractBaseUser, bool]:
    """The rater of ``link`` (one per external id and platform) and whether they are new.

    A first visit creates an annotator with no password (the link's visit logs them in) and a
    profile on the consent step; a later one, from any device, resumes them and records the
    visit's ids. Raises EntryRefused for a newcomer when the study is closed, and for a rater who
    withdrew (their account is closed). Two first visits at once make one rater.
    """
    existing = _participation(link)
    if existing is None:
        if refusal := study().newcomer_refusal():
            raise EntryRefused(refusal[0], refusal[1], status=403)
        try:
            return _participant_create(link, now), True
        except IntegrityError:  # the same id's other first visit won the race
            existing = _participation(link)
    if existing.profile.withdrawn_at is not None or not existing.profile.user.is_active:
        raise EntryRefused("withdrawn", "You withdrew from this study: your account is closed.", status=403)
    updates = {"last_entry_at": now}
    for field in ("study_id", "session_id", "assignment_id", "return_to"):
        if getattr(link, field):
            updates[field] = getattr(link, field)
    Participation.objects.filter(pk=existing.pk).update(**updates)
    return existing.profile.user, False


def link_is_of(*, link: EntryLink, user: AbstractBaseUser) -> bool:
    """Whether ``link`` names ``user``'s own participation (a signed-in participant back through it)."""
    existing = _participation(link)
    return existing is not None and existing.profile.user_id == user.pk


def _participation(link: EntryLink) -> Participation | None:
    return (
        Participation.objects.select_related("profile__user")
        .filter(platform=link.platform, external_id=link.external_id)
        .first()
    )


def _participant_create(link: EntryLink, now: datetime) -> AbstractBaseUser:
    user_model = get_user_model()
    with transaction.atomic():
        # The user name says nothing of the person: the external id lives on the Participation only.
        user = user_model(username=f"{link.platform}-{secrets.token_hex(6)}")
        user.set_unusable_password()
        user.save()
        user.groups.add(ensure_roles()[ANNOTATOR])
        profile = RaterProfile.objects.create(user=user)
        Participation.objects.create(
            profile=profile,
            platform=link.platform,
            external_id=link.external_id,
            study_id=link.study_id,
            session_id=link.session_id,
            assignment_id=link.assignment_id,
            return_to=link.return_to,
            entered_at=now,
            last_entry_at=now,
        )
    return user
