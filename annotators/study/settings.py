"""The study's settings (SPEC 7), in one place: read from ``settings.RATINGGAME_STUDY`` (the
environment, ``ratinggame/settings.py``) into one typed object, with the rules that depend only on
them. Every page, command and service asks ``study()``; nothing else reads RATINGGAME_STUDY."""

from dataclasses import dataclass, field, fields
from datetime import datetime
from decimal import Decimal

from django.conf import settings
from django.utils import timezone


@dataclass(frozen=True)
class StudySettings:
    title: str
    operator: str  # the principal investigator or team
    contact: str  # e-mail address or URL
    minutes: int  # estimated minutes per session (0: not said)
    compensation: str
    open_signup: bool
    closed: bool
    closes_at: datetime | None
    quota_ratings: int  # counted game ratings that complete a session (0: no limit)
    quota_minutes: int  # active minutes that complete a session (0: no limit)
    continue_after_completion: bool
    # Failed probation rounds that end a session: screened out before ever entering the game,
    # completed (and flagged) after (SPEC 7); 0: never.
    screen_out_rounds: int
    completion_code: str
    screen_out_code: str
    # Fair attention checks (SPEC 7, off by default): one game serve in this many of a participant's
    # is one (0: none); this many failed make a participant reject-eligible.
    attention_every: int
    attention_fails: int
    active_seconds_cap: int
    pay_hourly: Decimal
    pay_per_point: Decimal
    currency: str
    platform_min_hourly: Decimal
    pay_base_as_bonus: bool
    platform_reward: Decimal
    platforms: tuple[str, ...]
    generic_id_param: str
    generic_return_url: str
    prolific_study_id: str
    prolific_api_url: str
    # A secret: never shown back (``rows`` says only whether it is set), never in a repr.
    prolific_api_token: str = field(default="", repr=False)

    def is_closed(self, now: datetime | None = None) -> bool:
        """Closed by the setting, or past its closing time: no new raters come in."""
        if self.closed:
            return True
        return self.closes_at is not None and (now or timezone.now()) >= self.closes_at

    def newcomer_refusal(self, *, signup: bool = False) -> tuple[str, str] | None:
        """(code, words) when a newcomer may not come in, else None: a closed study takes no new
        raters (sign-up and entry links alike); with open sign-up off, raters come by links only."""
        if self.is_closed():
            return "study_closed", "This study is closed: it takes no new participants."
        if signup and not self.open_signup:
            return "signup_closed", "This study takes its participants through a recruitment platform's link only."
        return None

    @property
    def contact_href(self) -> str:
        return f"mailto:{self.contact}" if "@" in self.contact and ":" not in self.contact else self.contact

    def rows(self) -> list[tuple[str, object]]:
        """Every setting with its words, for the staff page that shows them."""
        rows = []
        for setting in fields(self):
            value = getattr(self, setting.name)
            if setting.name == "prolific_api_token":
                value = "set (not shown)" if value else "not set"
            rows.append((LABELS[setting.name], ", ".join(value) if isinstance(value, tuple) else value))
        return rows


# What each setting does, as the staff page says it (docs/researchers/prolific.md gives the variable names).
LABELS = {
    "title": "Study title",
    "operator": "Run by (principal investigator)",
    "contact": "Contact",
    "minutes": "Estimated minutes per session (0: not said)",
    "compensation": "Compensation, as raters read it",
    "open_signup": "Open sign-up with a user name and password",
    "closed": "Closed by the setting",
    "closes_at": "Closes at",
    "quota_ratings": "Session quota: counted game ratings (0: no limit)",
    "quota_minutes": "Session quota: active minutes (0: no limit)",
    "continue_after_completion": "Raters may keep rating after completing",
    "screen_out_rounds": (
        "Failed probation rounds that end a session: screened out before the game, completed after (0: never)"
    ),
    "completion_code": "Completion code",
    "screen_out_code": "Screened-out code",
    "attention_every": "Attention checks: one game pair in this many of a participant's (0: none)",
    "attention_fails": "Attention checks failed that make a participant reject-eligible",
    "active_seconds_cap": "Active time counted per rating, at most (seconds)",
    "pay_hourly": "Pay per active hour",
    "pay_per_point": "Bonus per game point",
    "currency": "Currency",
    "platform_min_hourly": "Platform's minimum hourly pay at the median (0: no check)",
    "pay_base_as_bonus": "Bonus file and bonus API carry the base pay too (off: Prolific's reward pays it)",
    "platform_reward": "The study's reward per participant on the platform (counted at the median)",
    "prolific_study_id": "Prolific: the study's id (approvals and bonuses)",
    "prolific_api_url": "Prolific: API address",
    "prolific_api_token": "Prolific: API token",
    "platforms": "Platforms whose entry links are taken",
    "generic_id_param": "Generic platform: the link's participant-id parameter",
    "generic_return_url": "Generic platform: return address ({code} becomes the code)",
}


def study() -> StudySettings:
    conf = settings.RATINGGAME_STUDY
    return StudySettings(
        title=conf["TITLE"],
        operator=conf["OPERATOR"],
        contact=conf["CONTACT"],
        minutes=conf["MINUTES"],
        compensation=conf["COMPENSATION"],
        open_signup=conf["OPEN_SIGNUP"],
        closed=conf["CLOSED"],
        closes_at=conf["CLOSES_AT"],
        quota_ratings=conf["QUOTA_RATINGS"],
        quota_minutes=conf["QUOTA_MINUTES"],
        continue_after_completion=conf["CONTINUE_AFTER_COMPLETION"],
        screen_out_rounds=conf["SCREEN_OUT_ROUNDS"],
        completion_code=conf["COMPLETION_CODE"],
        screen_out_code=conf["SCREEN_OUT_CODE"],
        attention_every=conf["ATTENTION_EVERY"],
        attention_fails=conf["ATTENTION_FAILS"],
        active_seconds_cap=conf["ACTIVE_SECONDS_CAP"],
        pay_hourly=Decimal(conf["PAY_HOURLY"]),
        pay_per_point=Decimal(conf["PAY_PER_POINT"]),
        currency=conf["CURRENCY"],
        platform_min_hourly=Decimal(conf["PLATFORM_MIN_HOURLY"]),
        pay_base_as_bonus=conf["PAY_BASE_AS_BONUS"],
        platform_reward=Decimal(conf["PLATFORM_REWARD"]),
        platforms=tuple(conf["PLATFORMS"]),
        generic_id_param=conf["GENERIC_ID_PARAM"],
        generic_return_url=conf["GENERIC_RETURN_URL"],
        prolific_study_id=conf["PROLIFIC_STUDY_ID"],
        prolific_api_url=conf["PROLIFIC_API_URL"],
        prolific_api_token=conf["PROLIFIC_API_TOKEN"],
    )
