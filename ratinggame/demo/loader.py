"""Demo content: real photographs shipped inside scikit-image, captions at every level.

Nothing is downloaded: the photographs are files of the scikit-image package
(skimage/data/*.png|jpg). Running it twice changes nothing but the printed passwords.

No model weights can be downloaded either, so nothing could prime the demo's game pairs
(SPEC section 4), and without primes the first rater of every pair scores 0: a lone person
trying the demo would fail every qualification window. The demo game pairs are therefore
primed from the level each caption was written for (two primes, 0.25 either side of it),
stored as model ratings under an identity that says exactly that, so staff pages and exports
never mistake them for a model's. In demo mode a seeded demo crowd (``ratinggame.demo.crowd``)
has also played a little, so the game, the exports and the staff pages have data.
"""

import importlib.util
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from annotators.models import RaterProfile
from annotators.roles import ADMIN, ANNOTATOR, RESEARCHER, ensure_roles
from ratinggame.demo import content as demo_content
from ratinggame.demo.crowd import CrowdReport, demo_crowd_play
from ratinggame.models import CaptionPair, Pool, PrimingStatus
from ratinggame.pairs.images import check_image_bytes
from ratinggame.pairs.services import image_store, pair_create, pairs_created
from ratinggame.pairs.validation import check_expert_fields, clean_caption, clean_references, clean_source
from scoring.models import ModelRating
from scoring.priming.registry import DEMO_METRIC, metric_checked

DEMO_PRIME_IDENTITY = "demo: the level the caption was written for (demo content, not a model)"
DEMO_PRIME_METRIC = DEMO_METRIC
DEMO_PRIME_SPREAD = 0.25

DEMO_ACCOUNTS = (
    ("admin", ADMIN),
    ("researcher", RESEARCHER),
    ("annotator1", ANNOTATOR),
    ("annotator2", ANNOTATOR),
)


@dataclass
class DemoReport:
    images_created: int = 0
    pairs_created: int = 0
    pairs_existing: int = 0
    pairs_primed: int = 0
    passwords: dict[str, str] = field(default_factory=dict)
    crowd: CrowdReport = field(default_factory=CrowdReport)


def skimage_data_dir() -> Path:
    spec = importlib.util.find_spec("skimage")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("scikit-image is not installed; install requirements.txt first")
    return Path(next(iter(spec.submodule_search_locations))) / "data"


@transaction.atomic
def load_demo(*, with_accounts: bool) -> DemoReport:
    report = DemoReport()
    folder = skimage_data_dir()
    images = {}
    for key, filename in demo_content.DEMO_IMAGES.items():
        checked = check_image_bytes((folder / filename).read_bytes())
        image, created = image_store(checked=checked, original_name=filename, source=f"scikit-image data: {filename}")
        images[key] = image
        report.images_created += created
    new_ids = []
    levels: dict[int, int] = {}
    for pool, items in (
        (Pool.TUTORIAL, demo_content.TUTORIAL),
        (Pool.PROBATION, demo_content.PROBATION),
        (Pool.GAME, demo_content.GAME),
        (Pool.CONTROL, demo_content.CONTROL),
        (Pool.GUIDE, demo_content.GUIDE),
        (Pool.ATTENTION, demo_content.ATTENTION),  # served only when a study turns them on
    ):
        for order, item in enumerate(items, start=1):
            image = images[item["image"]]
            caption = clean_caption(item["caption"])
            existing = CaptionPair.objects.filter(image=image, caption=caption).first()
            if existing is not None:
                report.pairs_existing += 1
                if "level" in item:
                    levels[existing.pk] = item["level"]
                continue
            explanation = item.get("explanation", "")
            check_expert_fields(pool, item.get("expert_rating"), explanation)
            pair = pair_create(
                image=image,
                caption=caption,
                source=clean_source(item.get("source")),
                pool=pool,
                references=clean_references(item.get("references")),
                expert_rating=item.get("expert_rating"),
                explanation=explanation,
                display_order=order,
            )
            new_ids.append(pair.pk)
            if "level" in item:
                levels[pair.pk] = item["level"]
                demo_primes_store(pair=pair, level=item["level"])
                report.pairs_primed += 1
    report.pairs_created = len(new_ids)
    pairs_created(new_ids)
    if with_accounts:
        report.passwords = _demo_accounts()
        report.crowd = demo_crowd_play(levels=levels, now=timezone.now())
    return report


def demo_primes_store(*, pair: CaptionPair, level: int) -> None:
    """Two primes around the written level (SPEC section 4 replaces them as humans rate)."""
    values = [max(1.0, level - DEMO_PRIME_SPREAD), min(5.0, level + DEMO_PRIME_SPREAD)]
    for slot, value in enumerate(values, start=1):
        ModelRating.objects.create(
            pair=pair,
            slot=slot,
            model_identity=DEMO_PRIME_IDENTITY,
            metric=metric_checked(DEMO_PRIME_METRIC),
            raw_score=(value - 1.0) / 4.0,
            value=value,
        )
    pair.primes = values
    pair.priming_status = PrimingStatus.DONE
    pair.priming_error = ""
    pair.save(update_fields=["primes", "priming_status", "priming_error"])


def _demo_accounts() -> dict[str, str]:
    groups = ensure_roles()
    user_model = get_user_model()
    passwords = {}
    for username, role in DEMO_ACCOUNTS:
        user, _ = user_model.objects.get_or_create(username=username, defaults={"email": f"{username}@example.org"})
        password = secrets.token_urlsafe(9)
        user.set_password(password)
        user.is_staff = role == ADMIN
        user.is_superuser = role == ADMIN
        user.save()
        user.groups.add(groups[role])
        if role == ANNOTATOR:
            RaterProfile.objects.get_or_create(user=user)
        passwords[username] = password
    return passwords
