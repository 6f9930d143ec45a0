"""factory_boy factories shared by the tests."""

import hashlib
import io

import factory
from django.contrib.auth import get_user_model
from django.core.files.base import ContentFile
from PIL import Image as PILImage

from annotators.models import RaterProfile, RaterState
from ratinggame.models import CaptionPair, Image, Pool, PrimingStatus


def png_bytes(seed: int, size: tuple[int, int] = (32, 24), mode: str = "RGB") -> bytes:
    """A small valid PNG whose content (and so sha256) depends on seed."""
    colour = ((seed * 53) % 256, (seed * 97) % 256, (seed * 193 + seed // 256) % 256)
    image = PILImage.new(mode, size, colour if mode == "RGB" else seed % 256)
    image.putpixel((0, 0), (seed % 256, (seed // 256) % 256, (seed // 65536) % 256) if mode == "RGB" else 0)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.org")
    password = factory.django.Password("correct horse battery staple")


class RaterProfileFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = RaterProfile

    user = factory.SubFactory(UserFactory)
    state = RaterState.TUTORIAL


class ImageFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Image

    class Params:
        seed = factory.Sequence(lambda n: n + 1)

    original_name = factory.LazyAttribute(lambda o: f"image{o.seed}.png")
    source = "test"
    sha256 = factory.LazyAttribute(lambda o: hashlib.sha256(png_bytes(o.seed)).hexdigest())
    file = factory.LazyAttribute(lambda o: ContentFile(png_bytes(o.seed), name=f"image{o.seed}.png"))


class CaptionPairFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = CaptionPair

    image = factory.SubFactory(ImageFactory)
    caption = factory.Sequence(lambda n: f"a test caption number {n}")
    source = "other"
    pool = Pool.GAME
    display_order = factory.Sequence(lambda n: n)
    priming_status = factory.LazyAttribute(
        lambda o: PrimingStatus.PENDING if o.pool == Pool.GAME else PrimingStatus.NOT_NEEDED
    )


class TutorialPairFactory(CaptionPairFactory):
    pool = Pool.TUTORIAL
    expert_rating = 3
    explanation = "Relevant objects are identified, but not where they are."


class ProbationPairFactory(TutorialPairFactory):
    pool = Pool.PROBATION


class ControlPairFactory(TutorialPairFactory):
    """A control pair: expert-rated, hidden among the game pairs (SPEC 2.5)."""

    pool = Pool.CONTROL


class AttentionCheckFactory(TutorialPairFactory):
    """A study's attention check (SPEC 7): its caption says which level to choose (its expert rating)."""

    pool = Pool.ATTENTION
    expert_rating = 2
    caption = factory.LazyAttribute(lambda pair: f"Attention check: for this pair, choose {pair.expert_rating}.")


def rating_make(
    *,
    rater,
    pair,
    value: int,
    stage: str | None = None,
    excluded: bool = False,
    excluded_reason: str = "",
    submitted_at=None,
    seconds: float = 11.0,
):
    """An Assignment and its submitted Rating written straight through the ORM.

    No game rules run (no points, no aggregates): for tests of what reads ratings (exports,
    statistics). ``stage`` defaults to the pair's pool.
    """
    from datetime import timedelta

    from django.utils import timezone

    from ratinggame.models import Assignment, Rating

    submitted = submitted_at or timezone.now()
    served = submitted - timedelta(seconds=seconds)
    stage = stage or pair.pool
    assignment = Assignment.objects.create(
        rater=rater,
        pair=pair,
        stage=stage,
        served_at=served,
        expires_at=served + timedelta(minutes=30),
        submitted_at=submitted,
    )
    return Rating.objects.create(
        assignment=assignment,
        pair=pair,
        rater=rater,
        stage=stage,
        value=value,
        served_at=served,
        submitted_at=submitted,
        excluded=excluded,
        excluded_reason=excluded_reason,
    )


# --- Ratings made directly with the ORM (competency and staff tests) ------------------------

_RATING_CLOCK = {"next": None}


def rating_record(
    *,
    rater,
    pair,
    value: int,
    seconds: float = 10.0,
    stage: str | None = None,
    points: int = 0,
    excluded: bool = False,
    submitted_at=None,
    reference: int | None = None,
):
    """An Assignment and its Rating with ``points`` (and the consensus or expert rating shown,
    ``reference``), submitted ``seconds`` after serving.

    Without ``submitted_at`` each call is one minute after the previous one (from 30 days
    ago), so ratings made in a row are in submission order with distinct times.
    """
    from datetime import timedelta

    from django.utils import timezone

    from ratinggame.models import Assignment, Rating

    if submitted_at is None:
        clock = _RATING_CLOCK["next"] or timezone.now() - timedelta(days=30)
        submitted_at = clock
        _RATING_CLOCK["next"] = clock + timedelta(minutes=1)
    served_at = submitted_at - timedelta(seconds=seconds)
    stage = stage or pair.pool
    assignment = Assignment.objects.create(
        rater=rater,
        pair=pair,
        stage=stage,
        served_at=served_at,
        expires_at=served_at + timedelta(minutes=30),
        submitted_at=submitted_at,
    )
    return Rating.objects.create(
        assignment=assignment,
        pair=pair,
        rater=rater,
        stage=stage,
        value=value,
        served_at=served_at,
        submitted_at=submitted_at,
        points=points,
        reference=reference,
        excluded=excluded,
    )


def user_with_role(role: str, **kwargs):
    """A user in one of the groups of annotators.roles (annotator, researcher, admin)."""
    from annotators.roles import ensure_roles

    user = UserFactory(**kwargs)
    user.groups.add(ensure_roles()[role])
    return user
