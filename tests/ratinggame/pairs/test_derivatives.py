"""Display copies of pair images: made once after an image is stored, upright, never upscaled,
served with long cache headers; pages offer them through srcset; a backfill command."""

import io

import numpy as np
import pytest
from django.core.files.storage import default_storage
from django.core.management import call_command
from PIL import Image as PILImage

from ratinggame.models import Image
from ratinggame.pairs.images import check_image_bytes
from ratinggame.pairs.services import image_store
from tests.factories import CaptionPairFactory, ImageFactory

pytestmark = pytest.mark.django_db


def jpeg_bytes(size: tuple[int, int], *, orientation: int | None = None) -> bytes:
    picture = PILImage.new("RGB", size, (200, 40, 40))
    # A dark band along the top edge as stored, to see where it ends up once made upright.
    picture.paste((0, 0, 0), (0, 0, size[0], size[1] // 10))
    exif = PILImage.Exif()
    if orientation is not None:
        exif[0x0112] = orientation
    buffer = io.BytesIO()
    picture.save(buffer, format="JPEG", exif=exif.tobytes(), quality=95)
    return buffer.getvalue()


def stored(data: bytes, django_capture_on_commit_callbacks) -> Image:
    with django_capture_on_commit_callbacks(execute=True):
        image, created = image_store(checked=check_image_bytes(data), original_name="photo.jpg")
    assert created
    image.refresh_from_db()
    return image


def test_a_stored_image_gets_upright_webp_copies_at_three_sizes(django_capture_on_commit_callbacks):
    # Stored 2000x1000 with EXIF orientation 6: shown rotated a quarter turn, 1000 wide, 2000 tall.
    image = stored(jpeg_bytes((2000, 1000), orientation=6), django_capture_on_commit_callbacks)

    assert [(copy["width"], copy["height"]) for copy in image.derivatives] == [(80, 160), (240, 480), (512, 1024)]
    for copy in image.derivatives:
        assert copy["name"].startswith(image.file.name.rsplit(".", 1)[0] + "-")
        with default_storage.open(copy["name"]) as handle, PILImage.open(handle) as picture:
            assert picture.format == "WEBP"
            assert picture.size == (copy["width"], copy["height"])
            # The dark band that ran along the stored top edge is now down the right side.
            middle = picture.height // 2
            assert sum(picture.getpixel((picture.width - 2, middle))) < 60 < sum(picture.getpixel((1, middle)))


def test_a_16_bit_grey_image_is_shown_grey_as_the_models_see_it(django_capture_on_commit_callbacks):
    # 30000 of 65535: a mid grey. Pillow's own conversion clips it to white (255).
    picture = PILImage.fromarray(np.full((48, 64), 30000, dtype=np.uint16))
    assert picture.mode == "I;16"
    buffer = io.BytesIO()
    picture.save(buffer, format="PNG")
    image = stored(buffer.getvalue(), django_capture_on_commit_callbacks)
    with default_storage.open(image.derivatives[0]["name"]) as handle, PILImage.open(handle) as copy:
        red, green, blue = copy.convert("RGB").getpixel((32, 24))
    assert red == green == blue and abs(red - round(30000 / 65535 * 255)) <= 2


def test_the_admin_preview_is_sized_upright_like_its_copy(django_capture_on_commit_callbacks):
    from ratinggame.admin import thumbnail

    image = stored(jpeg_bytes((2000, 1000), orientation=6), django_capture_on_commit_callbacks)
    assert 'width="40" height="80"' in thumbnail(image)


def test_small_originals_are_never_enlarged(django_capture_on_commit_callbacks):
    image = stored(jpeg_bytes((300, 200)), django_capture_on_commit_callbacks)
    assert [(copy["width"], copy["height"]) for copy in image.derivatives] == [(160, 107), (300, 200)]


def test_no_copy_is_made_for_an_import_that_rolls_back(django_capture_on_commit_callbacks, settings):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        image_store(checked=check_image_bytes(jpeg_bytes((600, 400))), original_name="photo.jpg")
    # The copies wait for the commit: a rolled-back import leaves no file behind.
    assert len(callbacks) == 1
    assert Image.objects.get().derivatives == []
    assert [p.name for p in (settings.MEDIA_ROOT / "images").rglob("*.webp")] == []


def test_copies_are_served_with_long_cache_headers(client, django_capture_on_commit_callbacks):
    image = stored(jpeg_bytes((1200, 800)), django_capture_on_commit_callbacks)
    answer = client.get(default_storage.url(image.derivatives[1]["name"]))
    assert answer.status_code == 200
    assert answer["Content-Type"] == "image/webp"
    assert answer["Cache-Control"] == "public, max-age=31536000, immutable"
    assert client.get(f"/media/{image.file.name[:-4]}-480.exe").status_code == 404


def test_pages_offer_the_copies_and_the_original_only_on_demand(client, django_capture_on_commit_callbacks):
    image = stored(jpeg_bytes((1200, 800)), django_capture_on_commit_callbacks)
    CaptionPairFactory(image=image, caption="a red square")
    page = client.get("/").content.decode()
    assert "-160.webp 160w" in page and "-480.webp 480w" in page and "-1024.webp 1024w" in page
    assert image.file.url not in page


def test_backfill_command_makes_missing_copies_and_names_unreadable_files(capsys):
    readable = ImageFactory(seed=5)
    broken = ImageFactory(seed=6)
    with default_storage.open(broken.file.name, "wb") as handle:
        handle.write(b"\x89PNG\r\n\x1a\n truncated")
    call_command("make_derivatives")
    out = capsys.readouterr()
    assert "Display copies made for 1 image(s); 1 could not be read." in out.out
    assert f"image {broken.pk}" in out.err
    readable.refresh_from_db()
    broken.refresh_from_db()
    assert [copy["width"] for copy in readable.derivatives] == [32]
    assert broken.derivatives == []
    # A second run has nothing left to do but the unreadable file; --force makes them again.
    call_command("make_derivatives")
    assert "made for 0 image(s); 1 could not be read" in capsys.readouterr().out
    call_command("make_derivatives", "--force")
    assert "made for 1 image(s); 1 could not be read" in capsys.readouterr().out
