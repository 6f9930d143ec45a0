"""Entry links from recruitment platforms (SPEC 7): which platform a link comes from, its ids
checked, and where a finished participant is sent back to.

Platforms are a registry: one small class per platform, in the order links are matched. A link
names its platform by its participant-id parameter (Prolific's ``PROLIFIC_PID``, Mechanical
Turk's ``workerId``, the generic platform's configured one). No Django model here: the service
that creates or resumes the rater is ``annotators.study.services.participant_enter``.
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlencode

from annotators.models import Platform
from annotators.study.settings import StudySettings

# SPEC 7: 1-64 letters, digits, "-" and "_" (Prolific's ids are 24 hex characters).
ID_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,64}")
ID_RULE = "1 to 64 letters, digits, “-” or “_”"


@dataclass(frozen=True)
class EntryLink:
    """A participant's link, checked: who they are on which platform, and the platform's other ids."""

    platform: str
    external_id: str
    study_id: str = ""
    session_id: str = ""
    assignment_id: str = ""
    return_to: str = ""


class EntryRefused(Exception):
    """A link this site does not take: ``status`` is the HTTP status to answer with (nothing is written)."""

    def __init__(self, code: str, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status


def checked_id(params: Mapping[str, str], name: str, *, required: bool = False) -> str:
    value = params.get(name, "")
    if value == "" and not required:
        return ""
    if not ID_PATTERN.fullmatch(value):
        shown = "empty" if value == "" else f"{len(value)} characters" if len(value) > 64 else f"“{value}”"
        raise EntryRefused("invalid_id", f"The link's {name} must be {ID_RULE} (it is {shown}).")
    return value


class Prolific:
    key = Platform.PROLIFIC

    def id_param(self, study: StudySettings) -> str:
        return "PROLIFIC_PID"

    def link(self, params: Mapping[str, str], study: StudySettings) -> EntryLink | None:
        return EntryLink(
            platform=self.key,
            external_id=checked_id(params, "PROLIFIC_PID", required=True),
            study_id=checked_id(params, "STUDY_ID"),
            session_id=checked_id(params, "SESSION_ID"),
        )

    def return_url(self, code: str, participation, study: StudySettings) -> str:
        return "https://app.prolific.com/submissions/complete?" + urlencode({"cc": code})


class MechanicalTurk:
    key = Platform.MTURK
    PREVIEW = "ASSIGNMENT_ID_NOT_AVAILABLE"
    # Where a HIT's completion may be sent: MTurk's own hosts, never an address a link chose.
    SUBMIT_HOSTS = frozenset({"www.mturk.com", "workersandbox.mturk.com"})
    # MTurk sends turkSubmitTo as a bare origin. Anything more (a path, "user@", "\", a port,
    # a control character) is refused rather than parsed: urlsplit and a browser disagree on such
    # text ("https://evil.example\@www.mturk.com" is www.mturk.com to urlsplit, evil.example to a
    # browser, which reads "\" as "/"), and the completion code is sent to whichever host it reads.
    SUBMIT_ORIGIN = re.compile(r"https://([a-z.]+)/?")

    def id_param(self, study: StudySettings) -> str:
        return "workerId"

    def accepts(self, return_to: str) -> bool:
        origin = self.SUBMIT_ORIGIN.fullmatch(return_to)
        return origin is not None and origin.group(1) in self.SUBMIT_HOSTS

    def link(self, params: Mapping[str, str], study: StudySettings) -> EntryLink | None:
        if params.get("assignmentId") == self.PREVIEW:
            return None  # a worker previewing the HIT: the description only
        return_to = params.get("turkSubmitTo", "")
        if return_to and not self.accepts(return_to):
            raise EntryRefused(
                "invalid_return",
                "The link's turkSubmitTo is not a Mechanical Turk address "
                "(https://www.mturk.com or https://workersandbox.mturk.com).",
            )
        return EntryLink(
            platform=self.key,
            external_id=checked_id(params, "workerId", required=True),
            assignment_id=checked_id(params, "assignmentId", required=True),
            study_id=checked_id(params, "hitId"),
            return_to=return_to.rstrip("/"),
        )

    def return_url(self, code: str, participation, study: StudySettings) -> str:
        if not self.accepts(participation.return_to):
            return ""  # none given, or stored before the address was checked as a browser reads it
        query = urlencode({"assignmentId": participation.assignment_id, "code": code})
        return f"{participation.return_to}/mturk/externalSubmit?{query}"


class Generic:
    """CloudResearch Connect and the like: the participant id in a parameter the study names."""

    key = Platform.GENERIC

    def id_param(self, study: StudySettings) -> str:
        return study.generic_id_param

    def link(self, params: Mapping[str, str], study: StudySettings) -> EntryLink | None:
        return EntryLink(platform=self.key, external_id=checked_id(params, study.generic_id_param, required=True))

    def return_url(self, code: str, participation, study: StudySettings) -> str:
        return study.generic_return_url.replace("{code}", code) if study.generic_return_url else ""


PLATFORMS = {platform.key: platform for platform in (Prolific(), MechanicalTurk(), Generic())}


def entry_link(params: Mapping[str, str], study: StudySettings) -> EntryLink | None:
    """The checked link of a visit's query ``params``; None when it names no participant (no id,
    or a preview), which shows the study's description and creates no one. Raises EntryRefused
    for a malformed id or a platform the study does not take (403)."""
    for platform in PLATFORMS.values():
        if platform.id_param(study) in params:
            if platform.key not in study.platforms:
                raise EntryRefused(
                    "platform_not_enabled",
                    f"This study does not take participants from {platform.key.label}.",
                    status=403,
                )
            return platform.link(params, study)
    return None


def return_url(participation, code: str, study: StudySettings) -> str:
    """Where a participant who finished is sent back with ``code`` ("" where the platform has none)."""
    if participation is None:
        return ""
    return PLATFORMS[participation.platform].return_url(code, participation, study)
