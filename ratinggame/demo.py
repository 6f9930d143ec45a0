"""Demo content: real photographs shipped inside scikit-image, captions at every level.

Nothing is downloaded: the photographs are files of the scikit-image package
(skimage/data/*.png|jpg). Running it twice changes nothing but the printed passwords.
"""

import importlib.util
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from django.contrib.auth import get_user_model
from django.db import transaction

from annotators.models import RaterProfile
from annotators.roles import ADMIN, ANNOTATOR, RESEARCHER, ensure_roles
from ratinggame import demo_content
from ratinggame.images import check_image_bytes
from ratinggame.models import CaptionPair, Pool
from ratinggame.services import image_store, pair_create, pairs_created
from ratinggame.validation import check_expert_fields, clean_caption, clean_references, clean_source

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
    passwords: dict[str, str] = field(default_factory=dict)


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
    for pool, items in (
        (Pool.TUTORIAL, demo_content.TUTORIAL),
        (Pool.PROBATION, demo_content.PROBATION),
        (Pool.GAME, demo_content.GAME),
    ):
        for order, item in enumerate(items, start=1):
            image = images[item["image"]]
            caption = clean_caption(item["caption"])
            if CaptionPair.objects.filter(image=image, caption=caption).exists():
                report.pairs_existing += 1
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
    report.pairs_created = len(new_ids)
    pairs_created(new_ids)
    if with_accounts:
        report.passwords = _demo_accounts()
    return report


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
