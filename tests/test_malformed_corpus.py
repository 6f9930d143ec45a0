"""A corpus of malformed requests and files: each gets a clear 4xx (an API error body with a
message, or a page that says what went wrong), never a 500, and nothing is half-written.

Images and manifests go through the researcher upload (``POST /api/pairs/import``); ratings
and assignments through the game API (``POST /api/game/submit``); bodies, content types and
sizes through several endpoints; and the rating form through the HTML view. After every case
the rows (pairs, images, assignments, ratings, profiles) and the stored media files are
exactly as before; CMYK and 16-bit images are valid and must be stored byte for byte.
"""

import hashlib
import io
import json
import struct
import zlib
from dataclasses import dataclass, field
from datetime import timedelta

import numpy as np
import pytest
from django.core.cache import cache
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils import timezone
from PIL import Image as PILImage
from rest_framework.test import APIClient

from annotators.models import RaterProfile, RaterState
from ratinggame.models import Assignment, CaptionPair, Image, Pool, Rating
from tests.factories import CaptionPairFactory, TutorialPairFactory, png_bytes
from tests.ratinggame.api_helpers import PASSWORD, annotator, error_of, researcher, token_client, zip_bytes

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _quiet(settings):
    cache.clear()
    yield
    cache.clear()


# --- What must not change ------------------------------------------------------------------------


def snapshot(settings) -> dict:
    """Every row a malformed request could half-write, and the stored media files with their bytes."""
    media = settings.MEDIA_ROOT
    stored = [p for p in media.rglob("*") if p.is_file()] if media.exists() else []
    files = {str(p.relative_to(media)): hashlib.sha256(p.read_bytes()).hexdigest() for p in stored}
    return {
        "pairs": list(
            CaptionPair.objects.order_by("id").values_list(
                "id", "caption", "pool", "human_count", "human_sum", "human_sumsq", "in_flight", "assign_rank"
            )
        ),
        "images": list(Image.objects.order_by("id").values_list("id", "sha256")),
        "assignments": list(Assignment.objects.order_by("id").values_list("id", "submitted_at", "holds_slot")),
        "ratings": list(Rating.objects.order_by("id").values_list("id", "value", "excluded")),
        "profiles": list(
            RaterProfile.objects.order_by("id").values_list(
                "id", "state", "game_score", "window_count", "window_points"
            )
        ),
        "files": files,
    }


def assert_refused(response, status: int, code: str | None = None, says: str = "") -> dict:
    """A 4xx API error body with a message (and the expected code and words)."""
    assert response.status_code == status, (response.status_code, response.content[:500])
    error = error_of(response)
    if code is not None:
        assert error["code"] == code, error
    assert says.lower() in error["message"].lower() + json.dumps(error["details"]).lower(), error
    return error


# --- Files -------------------------------------------------------------------------------------


def noise_png(size: tuple[int, int] = (64, 48), seed: int = 0) -> bytes:
    pixels = np.random.default_rng(seed).integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
    buffer = io.BytesIO()
    PILImage.fromarray(pixels, "RGB").save(buffer, format="PNG")
    return buffer.getvalue()


def huge_header_png(width: int = 30_000, height: int = 30_000) -> bytes:
    """A tiny PNG whose header claims width x height pixels (a decompression bomb's header)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\x00" * 64))
        + chunk(b"IEND", b"")
    )


def saved(image: PILImage.Image, fmt: str, **options) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **options)
    return buffer.getvalue()


def animated_gif() -> bytes:
    frames = [PILImage.new("RGB", (16, 16), colour) for colour in ("red", "green", "blue")]
    return saved(frames[0], "GIF", save_all=True, append_images=frames[1:], duration=100, loop=0)


def cmyk_jpeg() -> bytes:
    return saved(PILImage.new("CMYK", (40, 30), (10, 200, 30, 40)), "JPEG", quality=90)


def sixteen_bit_png() -> bytes:
    image = PILImage.new("I;16", (40, 30))
    image.putdata([(x * 1500) % 65536 for x in range(40 * 30)])
    return saved(image, "PNG")


BAD_IMAGES = [
    ("zero-byte", lambda: b"", "empty (0 bytes)"),
    ("truncated png", lambda: noise_png()[: len(noise_png()) // 2], "damaged or truncated"),
    ("truncated jpeg", lambda: saved(PILImage.new("RGB", (64, 64), "red"), "JPEG")[:300], "damaged or truncated"),
    ("30000x30000 header", huge_header_png, "too large"),
    ("not an image", lambda: b"name,caption\nthis is a CSV, not a PNG\n", "not an image"),
    ("html posing as png", lambda: b"<html><script>alert(1)</script></html>", "not an image"),
    ("animated gif", animated_gif, "animated images are not supported"),
    ("tiff (not shown by browsers)", lambda: saved(PILImage.new("RGB", (8, 8)), "TIFF"), "format cannot be shown"),
    ("png header only", lambda: b"\x89PNG\r\n\x1a\n", "not an image"),
]


def manifest_file(text: str | bytes, name: str = "pairs.csv") -> SimpleUploadedFile:
    data = text.encode() if isinstance(text, str) else text
    return SimpleUploadedFile(name, data, content_type="text/csv")


def upload(client: APIClient, manifest, images: dict[str, bytes] | None = None, **fields):
    files = [SimpleUploadedFile(name, data) for name, data in (images or {}).items()]
    body = {"manifest": manifest, "images": files, **fields} if manifest is not None else {"images": files, **fields}
    return client.post("/api/pairs/import", body, format="multipart")


@pytest.mark.parametrize(("name", "make", "says"), BAD_IMAGES, ids=[case[0] for case in BAD_IMAGES])
def test_a_bad_image_is_refused_with_its_reason_and_nothing_is_written(settings, name, make, says):
    client = token_client(researcher())
    before = snapshot(settings)
    # In a zip, so that every file reaches the image checks (a loose empty file is refused earlier).
    images = {"images.zip": zip_bytes({"good.png": png_bytes(7), "bad.png": make()})}
    answer = upload(client, manifest_file("image,caption\ngood.png,fine\nbad.png,a caption\n"), images)
    error = assert_refused(answer, 400, "invalid_manifest")
    # The bad row is named (line 3 of the file) with the reason; the good row is not written either.
    assert [row["row"] for row in error["details"]["rows"]] == [3]
    assert says in error["details"]["rows"][0]["reason"]
    assert snapshot(settings) == before


def test_a_loose_empty_file_is_refused(settings):
    client = token_client(researcher())
    before = snapshot(settings)
    answer = upload(client, manifest_file("image,caption\nbad.png,a caption\n"), {"bad.png": b""})
    assert_refused(answer, 400, "invalid", "empty")
    assert snapshot(settings) == before


def test_an_image_over_the_byte_limit_is_refused(settings):
    settings.RATINGGAME = {**settings.RATINGGAME, "MAX_IMAGE_BYTES": 2000}
    client = token_client(researcher())
    before = snapshot(settings)
    answer = upload(client, manifest_file("image,caption\nbig.png,a caption\n"), {"big.png": noise_png((64, 64))})
    error = assert_refused(answer, 400, "invalid_manifest")
    assert "over the limit of 2,000 bytes" in error["details"]["rows"][0]["reason"]
    assert snapshot(settings) == before


@pytest.mark.parametrize(
    ("name", "make", "mode"),
    [("CMYK jpeg", cmyk_jpeg, "CMYK"), ("16-bit png", sixteen_bit_png, "I;16")],
    ids=["cmyk", "16-bit"],
)
def test_cmyk_and_16_bit_images_are_valid_and_stored_byte_for_byte(settings, name, make, mode):
    data = make()
    with PILImage.open(io.BytesIO(data)) as check:
        assert check.mode == mode  # the file really is what the case says
    client = token_client(researcher())
    answer = upload(client, manifest_file("image,caption\nphoto.img,a valid image\n"), {"photo.img": data})
    assert answer.status_code == 201, answer.content
    image = Image.objects.get()
    assert (image.width, image.height, image.sha256) == (40, 30, hashlib.sha256(data).hexdigest())
    with image.file.open("rb") as stored:
        assert stored.read() == data
    assert CaptionPair.objects.get().image == image


# --- Manifests -----------------------------------------------------------------------------------

GOOD = {"a.png": png_bytes(11), "b.png": png_bytes(12)}

# (id, manifest bytes or text, file name, the message says)
BAD_MANIFESTS = [
    ("latin-1 encoding", "image,caption\na.png,un café\n".encode("latin-1"), "pairs.csv", "not UTF-8"),
    ("utf-16 encoding", "image,caption\na.png,a cat\n".encode("utf-16"), "pairs.csv", "not UTF-8"),
    ("blank lines only", b"\n\n  \n", "pairs.csv", "empty"),
    ("header only", "image,caption\n", "pairs.csv", "no data rows"),
    ("missing caption column", "image,source\na.png,coco\n", "pairs.csv", "missing required column(s): caption"),
    ("missing image column", "caption\na cat\n", "pairs.csv", "missing required column(s): image"),
    ("unknown column", "image,caption,rating\na.png,a cat,5\n", "pairs.csv", "unknown column(s): rating"),
    ("column twice", "image,caption,caption\na.png,a,b\n", "pairs.csv", "the column 'caption' appears twice"),
    ("duplicate rows", "image,caption\na.png,a cat\na.png,a cat\n", "pairs.csv", "same image and caption as row 2"),
    ("too many fields", "image,caption\na.png,a cat,extra\n", "pairs.csv", "has 3 fields, the header has 2"),
    ("missing image file", "image,caption\nnowhere.png,a cat\n", "pairs.csv", "not found"),
    (
        "path outside the folder",
        "image,caption\n../../etc/passwd,a cat\n",
        "pairs.csv",
        "a file name inside the uploaded images",
    ),
    ("absolute path", "image,caption\n/etc/passwd,a cat\n", "pairs.csv", "a file name inside the uploaded images"),
    ("empty caption", "image,caption\na.png,   \n", "pairs.csv", "caption is empty"),
    ("caption too long", f"image,caption\na.png,{'word ' * 200}\n", "pairs.csv", "over the limit of 500"),
    ("control characters", "image,caption\na.png,a \x07 bell\n", "pairs.csv", "control characters"),
    ("nul byte", "image,caption\na.png,a\x00cat\n", "pairs.csv", ""),
    ("unknown source", "image,caption,source\na.png,a cat,martian\n", "pairs.csv", "unknown source"),
    ("unknown pool", "image,caption,pool\na.png,a cat,arcade\n", "pairs.csv", "unknown pool"),
    (
        "expert rating 7",
        "image,caption,pool,expert_rating,explanation\na.png,a cat,tutorial,7,why\n",
        "pairs.csv",
        "outside 1-5",
    ),
    (
        "expert rating not a number",
        "image,caption,pool,expert_rating,explanation\na.png,a cat,tutorial,four,why\n",
        "pairs.csv",
        "not a whole number",
    ),
    (
        "tutorial without explanation",
        "image,caption,pool,expert_rating\na.png,a cat,tutorial,4\n",
        "pairs.csv",
        "need an explanation",
    ),
    ("negative display order", "image,caption,display_order\na.png,a cat,-3\n", "pairs.csv", "must not be negative"),
    ("jsonl bad line", '{"image": "a.png", "caption": "ok"}\n{"image": "b.png",\n', "pairs.jsonl", "not valid JSON"),
    ("jsonl not an object", '["a.png", "a cat"]\n', "pairs.jsonl", "must be a JSON object"),
    ("jsonl missing column", '{"image": "a.png"}\n', "pairs.jsonl", "missing required column(s): caption"),
    ("jsonl caption not text", '{"image": "a.png", "caption": 42}\n', "pairs.jsonl", "caption must be text"),
    (
        "jsonl references not a list",
        '{"image": "a.png", "caption": "a cat", "references": 5}\n',
        "pairs.jsonl",
        "references must be",
    ),
    (
        "jsonl lone surrogate",
        '{"image": "a.png", "caption": "a cat \\ud800"}\n',
        "pairs.jsonl",
        "caption contains an unpaired surrogate",
    ),
    # Issue 15: inputs that answered 500 or were accepted.
    (
        "nul byte in a csv explanation",
        "image,caption,pool,expert_rating,explanation\na.png,a cat,tutorial,3,why\x00not\n",
        "pairs.csv",
        "explanation contains a NUL character",
    ),
    (
        "nul byte in a jsonl explanation",
        '{"image": "a.png", "caption": "a cat", "pool": "tutorial", "expert_rating": 3, "explanation": "a\\u0000b"}\n',
        "pairs.jsonl",
        "explanation contains a NUL character",
    ),
    (
        "nul byte in a csv image name",
        "image,caption\na.png\x00.png,a cat\n",
        "pairs.csv",
        "image file name contains a NUL",
    ),
    (
        "nul byte in a jsonl image name",
        '{"image": "a.png\\u0000", "caption": "a cat"}\n',
        "pairs.jsonl",
        "contains a NUL",
    ),
    ("display order 2^31", "image,caption,display_order\na.png,a cat,2147483648\n", "pairs.csv", "over the largest"),
    (
        "display order of 23 digits",
        f"image,caption,display_order\na.png,a cat,{'9' * 23}\n",
        "pairs.csv",
        "over the largest",
    ),
    (
        "zero-width caption",
        "image,caption\na.png,\u200b\u200b\u2060\n",
        "pairs.csv",
        "caption has no visible character",
    ),
    ("zero-width jsonl caption", '{"image": "a.png", "caption": "\\u200b\\ufeff"}\n', "pairs.jsonl", "no visible"),
    ("column twice, other case", "image,caption,Caption\na.png,a,b\n", "pairs.csv", "'caption' appears twice"),
    (
        "jsonl column twice, other case",
        '{"image": "a.png", "caption": "a", "Caption": "b"}\n',
        "pairs.jsonl",
        "'caption' appears twice (as 'caption' and 'Caption')",
    ),
    (
        "jsonl same key twice",
        '{"image": "a.png", "caption": "a", "caption": "b"}\n',
        "pairs.jsonl",
        "the column 'caption' appears twice",
    ),
    (
        "image name over 255 bytes",
        f"image,caption\n{'n' * 300}.png,a cat\n",
        "pairs.csv",
        "longer than 255 bytes",
    ),
]


@pytest.mark.parametrize(
    ("name", "manifest", "filename", "says"), BAD_MANIFESTS, ids=[case[0] for case in BAD_MANIFESTS]
)
def test_a_bad_manifest_is_refused_with_its_reason_and_nothing_is_written(settings, name, manifest, filename, says):
    client = token_client(researcher())
    before = snapshot(settings)
    answer = upload(client, manifest_file(manifest, filename), GOOD)
    assert_refused(answer, 400, "invalid_manifest", says)
    assert snapshot(settings) == before


@pytest.mark.parametrize("dry_run", ["false", "true"])
def test_a_display_order_out_of_range_is_refused_even_in_a_dry_run(settings, dry_run):
    client = token_client(researcher())
    before = snapshot(settings)
    answer = upload(
        client, manifest_file("image,caption,display_order\na.png,a cat,2147483648\n"), GOOD, dry_run=dry_run
    )
    error = assert_refused(answer, 400, "invalid_manifest")
    assert error["details"]["rows"] == [
        {"row": 2, "reason": "display_order 2147483648 is over the largest allowed, 2,147,483,647"}
    ]
    assert snapshot(settings) == before


@pytest.mark.parametrize("separator", ["\u2028", "\u0085", "\u2029", "\x1c"])
def test_jsonl_with_a_line_separator_inside_a_caption_is_valid_json(settings, separator):
    """U+2028, U+0085 and friends end a line for str.splitlines(), not for JSON Lines."""
    client = token_client(researcher())
    caption = f"a cat{separator}on a mat"
    line = json.dumps({"image": "a.png", "caption": caption}, ensure_ascii=False)
    answer = upload(client, manifest_file(line + "\n", "pairs.jsonl"), GOOD)
    assert answer.status_code == 201, answer.content
    # Stored with its white space folded, as every caption is.
    assert CaptionPair.objects.get().caption == "a cat on a mat"


def test_an_empty_manifest_file_is_refused(settings):
    client = token_client(researcher())
    before = snapshot(settings)
    answer = upload(client, manifest_file(b""), GOOD)
    assert_refused(answer, 400, "invalid", "empty")
    assert snapshot(settings) == before


def test_a_pair_already_in_the_database_is_a_duplicate(settings):
    client = token_client(researcher())
    first = upload(client, manifest_file("image,caption\na.png,a cat\n"), GOOD)
    assert first.status_code == 201
    before = snapshot(settings)
    again = upload(client, manifest_file("image,caption\nb.png,a dog\na.png,a cat\n"), GOOD)
    assert_refused(again, 400, "invalid_manifest", "already in the database as pair #")
    assert snapshot(settings) == before


BAD_UPLOADS = [
    ("no manifest", None, {}, {}, "invalid", "manifest"),
    ("image uploaded twice", "image,caption\na.png,a cat\n", {}, {"twice": True}, "invalid_manifest", "twice"),
    (
        "images zip is not a zip",
        "image,caption\na.png,a cat\n",
        {"a.zip": b"PK not really"},
        {},
        "invalid_manifest",
        "not a valid zip",
    ),
    (
        "absolute path in zip",
        "image,caption\nabs.png,a cat\n",
        {"a.zip": zip_bytes({"/abs.png": png_bytes(5)})},
        {},
        "invalid_manifest",
        "not a plain relative file name",
    ),
    (
        "encrypted zip member",
        "image,caption\nsecret.png,a cat\n",
        {"a.zip": None},
        {"encrypted": True},
        "invalid_manifest",
        "'secret.png' in 'a.zip' is encrypted",
    ),
    (
        "a file beside a zip folder of the same name",
        "image,caption\na/b.png,a cat\n",
        {"a.zip": zip_bytes({"a": png_bytes(5), "a/b.png": png_bytes(6)})},
        {},
        "invalid_manifest",
        "'a' is a file in the upload and also the folder of 'a/b.png'",
    ),
    (
        "a loose file, then a zip member under it",
        "image,caption\nd/b.png,a cat\n",
        {"d": png_bytes(5), "z.zip": zip_bytes({"d/b.png": png_bytes(6)})},
        {},
        "invalid_manifest",
        "'d' is a file in the upload and also the folder of 'd/b.png'",
    ),
    (
        "a zip folder, then a loose file of its name",
        "image,caption\nd/b.png,a cat\n",
        {"z.zip": zip_bytes({"d/b.png": png_bytes(6)}), "d": png_bytes(5)},
        {},
        "invalid_manifest",
        "'d' is a file in the upload and also a folder",
    ),
    (
        "a zip member name over 255 bytes",
        "image,caption\na.png,a cat\n",
        {"z.zip": zip_bytes({"x" * 300 + ".png": png_bytes(6)})},
        {},
        "invalid_manifest",
        "longer than 255 bytes",
    ),
    ("dry_run not a boolean", "image,caption\na.png,a cat\n", {}, {"dry_run": "perhaps"}, "invalid", "dry_run"),
    ("pool not a pool", "image,caption\na.png,a cat\n", {}, {"pool": "arcade"}, "invalid", "pool"),
]


@pytest.mark.parametrize(
    ("name", "manifest", "images", "fields", "code", "says"), BAD_UPLOADS, ids=[case[0] for case in BAD_UPLOADS]
)
def test_a_malformed_upload_request_is_refused(settings, name, manifest, images, fields, code, says):
    client = token_client(researcher())
    before = snapshot(settings)
    if fields.pop("encrypted", False):
        images = {"a.zip": encrypted_zip({"secret.png": png_bytes(5)})}
    if fields.pop("twice", False):
        body = {
            "manifest": manifest_file(manifest),
            "images": [SimpleUploadedFile("a.png", GOOD["a.png"]), SimpleUploadedFile("a.png", GOOD["a.png"])],
        }
        answer = client.post("/api/pairs/import", body, format="multipart")
    else:
        answer = upload(client, manifest_file(manifest) if manifest else None, {**GOOD, **images}, **fields)
    assert_refused(answer, 400, code, says)
    assert snapshot(settings) == before


def encrypted_zip(members: dict[str, bytes]) -> bytes:
    """A zip whose members are flagged as encrypted (general purpose bit 0), as an encrypting tool writes."""
    data = bytearray(zip_bytes(members))
    for signature, flag_offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        start = 0
        while (start := data.find(signature, start)) != -1:
            data[start + flag_offset] |= 0x1
            start += 4
    return bytes(data)


def test_the_unzipped_limits_bound_the_whole_upload_not_each_zip(settings):
    """Two zips of 2,000 bytes each passed a 3,000-byte limit: the limit is per upload."""
    first, second = noise_png((20, 20), seed=1), noise_png((20, 20), seed=2)
    settings.RATINGGAME = {**settings.RATINGGAME, "MAX_UNZIPPED_BYTES": len(first) + len(second) - 1}
    client = token_client(researcher())
    before = snapshot(settings)
    images = {"one.zip": zip_bytes({"one.png": first}), "two.zip": zip_bytes({"two.png": second})}
    answer = upload(client, manifest_file("image,caption\none.png,a\ntwo.png,b\n"), images)
    assert_refused(answer, 400, "invalid_manifest", "with 'two.zip' the upload's zips unpack to over")
    assert snapshot(settings) == before

    settings.RATINGGAME = {**settings.RATINGGAME, "MAX_UNZIPPED_BYTES": 10**9, "MAX_ZIP_MEMBERS": 1}
    answer = upload(client, manifest_file("image,caption\none.png,a\ntwo.png,b\n"), images)
    assert_refused(answer, 400, "invalid_manifest", "with 'two.zip' the upload holds over 1 files in zips")
    assert snapshot(settings) == before


def test_an_upload_over_the_request_limit_is_413(settings):
    settings.RATINGGAME = {**settings.RATINGGAME, "MAX_UPLOAD_BYTES": 4000}
    client = token_client(researcher())
    before = snapshot(settings)
    answer = upload(client, manifest_file("image,caption\nbig.png,a cat\n"), {"big.png": noise_png((64, 64))})
    assert_refused(answer, 413, "too_large", "over the limit")
    assert snapshot(settings) == before


# --- Ratings and assignments ------------------------------------------------------------------------


@dataclass
class Game:
    """A game rater with an open assignment, and another rater with one of their own."""

    client: APIClient
    user: object
    served: dict
    other_served: dict
    extra: dict = field(default_factory=dict)


@pytest.fixture
def game(settings) -> Game:
    settings.RATINGGAME = {**settings.RATINGGAME, "MIN_SECONDS_PER_RATING": 0}
    for _ in range(3):
        CaptionPairFactory(pool=Pool.GAME)
    user = annotator(state=RaterState.GAME)
    client = token_client(user)
    other = token_client(annotator(state=RaterState.GAME))
    served = client.post("/api/game/next", format="json").json()
    other_served = other.post("/api/game/next", format="json").json()
    assert "assignment_id" in served and "assignment_id" in other_served
    return Game(client=client, user=user, served=served, other_served=other_served)


BAD_VALUES = [
    ("zero", 0),
    ("six", 6),
    ("negative", -1),
    ("three and a half", 3.5),
    ("three point zero", 3.0),
    ("text x", "x"),
    ("empty text", ""),
    ("text 3.5", "3.5"),
    ("padded text", " 3"),
    ("arabic-indic three", "\u0663"),
    ("null", None),
    ("list", [3]),
    ("object", {"value": 3}),
    ("huge number", 10**30),
    ("true", True),
    ("false", False),
]


@pytest.mark.parametrize(("name", "value"), BAD_VALUES, ids=[case[0] for case in BAD_VALUES])
def test_a_value_that_is_not_a_rating_is_refused_and_the_pair_stays_open(settings, game, name, value):
    before = snapshot(settings)
    answer = game.client.post(
        "/api/game/submit", {"assignment_id": game.served["assignment_id"], "value": value}, format="json"
    )
    assert_refused(answer, 400, "invalid_value", "rating from 1 to 5")
    assert snapshot(settings) == before
    # Still open: the same pair, with its served time, is served again and takes a real rating.
    again = game.client.post("/api/game/next", format="json").json()
    assert (again["assignment_id"], again["served_at"]) == (game.served["assignment_id"], game.served["served_at"])


def test_a_value_beyond_any_float_is_refused(settings, game):
    before = snapshot(settings)
    body = f'{{"assignment_id": {game.served["assignment_id"]}, "value": 1e400}}'  # parses to inf
    answer = game.client.generic("POST", "/api/game/submit", body, content_type="application/json")
    assert_refused(answer, 400, "invalid_value", "rating from 1 to 5")
    assert snapshot(settings) == before


def test_a_missing_value_is_refused(settings, game):
    before = snapshot(settings)
    answer = game.client.post("/api/game/submit", {"assignment_id": game.served["assignment_id"]}, format="json")
    assert_refused(answer, 400, "invalid_value", "rating from 1 to 5")
    assert snapshot(settings) == before


BAD_ASSIGNMENT_IDS = [
    ("does not exist", 987_654, 404, "not_found"),
    ("negative", -5, 404, "not_found"),
    ("zero", 0, 404, "not_found"),
    ("huge", 10**30, 404, "not_found"),
    ("text", "abc", 400, "invalid_value"),
    ("numeric text", "1", 400, "invalid_value"),
    ("float", 1.5, 400, "invalid_value"),
    ("null", None, 400, "invalid_value"),
    ("boolean", True, 400, "invalid_value"),
    ("list", [1], 400, "invalid_value"),
]


@pytest.mark.parametrize(
    ("name", "assignment_id", "status", "code"), BAD_ASSIGNMENT_IDS, ids=[case[0] for case in BAD_ASSIGNMENT_IDS]
)
def test_a_submission_for_no_real_assignment_is_refused(settings, game, name, assignment_id, status, code):
    before = snapshot(settings)
    answer = game.client.post("/api/game/submit", {"assignment_id": assignment_id, "value": 3}, format="json")
    assert_refused(answer, status, code)
    assert snapshot(settings) == before


def test_a_foreign_assignment_is_not_yours(settings, game):
    before = snapshot(settings)
    answer = game.client.post(
        "/api/game/submit", {"assignment_id": game.other_served["assignment_id"], "value": 3}, format="json"
    )
    assert_refused(answer, 403, "not_yours", "someone else")
    feedback = game.client.get(f"/api/game/feedback/{game.other_served['assignment_id']}")
    assert_refused(feedback, 403, "not_yours")
    assert snapshot(settings) == before


def test_an_expired_assignment_is_refused(settings, game):
    Assignment.objects.filter(pk=game.served["assignment_id"]).update(expires_at=timezone.now() - timedelta(seconds=1))
    before = snapshot(settings)
    answer = game.client.post(
        "/api/game/submit", {"assignment_id": game.served["assignment_id"], "value": 3}, format="json"
    )
    assert_refused(answer, 400, "expired", "no longer open")
    assert snapshot(settings) == before


def test_forged_served_times_from_the_client_are_ignored(settings, game):
    settings.RATINGGAME = {**settings.RATINGGAME, "MIN_SECONDS_PER_RATING": 30}
    before = snapshot(settings)
    long_ago = (timezone.now() - timedelta(hours=1)).isoformat()
    forged = {
        "assignment_id": game.served["assignment_id"],
        "value": 3,
        "served_at": long_ago,
        "min_submit_at": long_ago,
        "submitted_at": timezone.now().isoformat(),
        "seconds_spent": 3600,
    }
    answer = game.client.post("/api/game/submit", forged, format="json")
    assert_refused(answer, 400, "too_early", "at least 30 seconds")
    assert snapshot(settings) == before


def test_a_replayed_submission_stores_one_rating_and_answers_the_first_feedback(settings, game):
    body = {"assignment_id": game.served["assignment_id"], "value": 4}
    first = game.client.post("/api/game/submit", body, format="json")
    assert first.status_code == 200
    after_first = snapshot(settings)
    assert first.json()["already_rated"] is False
    for replay in ({**body}, {**body, "value": 1}):
        again = game.client.post("/api/game/submit", replay, format="json")
        # The first feedback, marked as a repeat: the value sent again is not taken.
        assert again.status_code == 200 and again.json() == {**first.json(), "already_rated": True}
    assert snapshot(settings) == after_first
    assert list(Rating.objects.values_list("value", flat=True)) == [4]


def test_a_tutorial_assignment_submitted_from_the_game_is_the_wrong_stage(settings):
    settings.RATINGGAME = {**settings.RATINGGAME, "MIN_SECONDS_PER_RATING": 0}
    TutorialPairFactory(expert_rating=3, display_order=0)
    CaptionPairFactory(pool=Pool.GAME)
    user = annotator(state=RaterState.TUTORIAL)
    client = token_client(user)
    served = client.post("/api/game/next", format="json").json()
    RaterProfile.objects.filter(user=user).update(state=RaterState.GAME, game_entered_at=timezone.now())
    before = snapshot(settings)
    answer = client.post("/api/game/submit", {"assignment_id": served["assignment_id"], "value": 3}, format="json")
    assert_refused(answer, 403, "wrong_stage", "tutorial")
    assert snapshot(settings) == before


# --- Bodies, content types and sizes ------------------------------------------------------------------

_BODIES = [
    ("invalid json", b'{"assignment_id": 1, "value": ', "application/json", 400, "parse_error"),
    ("json array", b"[1, 3]", "application/json", 400, "invalid_value"),
    ("json string", b'"rate it 3"', "application/json", 400, "invalid_value"),
    ("empty body", b"", "application/json", 400, "invalid_value"),
    ("NaN token", b'{"assignment_id": 1, "value": NaN}', "application/json", 400, "parse_error"),
    ("Infinity token", b'{"assignment_id": 1, "value": Infinity}', "application/json", 400, "parse_error"),
    ("invalid utf-8", b'{"assignment_id": 1, "value": "\xff\xfe"}', "application/json", 400, "parse_error"),
    ("plain text", b"assignment_id=1&value=3", "text/plain", 415, "unsupported_media_type"),
    ("xml", b"<rating><value>3</value></rating>", "application/xml", 415, "unsupported_media_type"),
    ("form with text ids", b"assignment_id=1&value=3", "application/x-www-form-urlencoded", 400, "invalid_value"),
    ("deeply nested json", b"[" * 100_000 + b"]" * 100_000, "application/json", 400, "parse_error"),
]
BAD_BODIES = [pytest.param(*case[1:], id=case[0]) for case in _BODIES]


@pytest.mark.parametrize(("body", "content_type", "status", "code"), BAD_BODIES)
def test_a_malformed_body_is_refused(settings, game, body, content_type, status, code):
    before = snapshot(settings)
    answer = game.client.generic("POST", "/api/game/submit", body, content_type=content_type)
    assert_refused(answer, status, code)
    assert snapshot(settings) == before


def test_an_oversized_json_body_is_413(settings, game):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    before = snapshot(settings)
    body = json.dumps({"assignment_id": game.served["assignment_id"], "value": 3, "padding": "x" * 5000})
    answer = game.client.generic("POST", "/api/game/submit", body, content_type="application/json")
    assert_refused(answer, 413, "too_large")
    assert snapshot(settings) == before


BAD_ACCOUNT_REQUESTS = [
    ("signup without password", "/api/auth/signup", {"username": "newbie"}, 400, "password"),
    ("signup with a weak password", "/api/auth/signup", {"username": "newbie", "password": "123"}, 400, "password"),
    ("signup with a slash in the name", "/api/auth/signup", {"username": "a/b", "password": PASSWORD}, 400, "username"),
    ("signup with a 200-char name", "/api/auth/signup", {"username": "u" * 200, "password": PASSWORD}, 400, "username"),
    ("signup with a taken name", "/api/auth/signup", {"username": "taken", "password": PASSWORD}, 400, "taken"),
    (
        "signup with a bad email",
        "/api/auth/signup",
        {"username": "x1", "password": PASSWORD, "email": "no"},
        400,
        "email",
    ),
    ("token with a wrong password", "/api/auth/token", {"username": "taken", "password": "wrong"}, 400, ""),
    ("token with a list as name", "/api/auth/token", {"username": ["taken"], "password": PASSWORD}, 400, "username"),
]


@pytest.mark.parametrize(
    ("name", "path", "body", "status", "says"), BAD_ACCOUNT_REQUESTS, ids=[case[0] for case in BAD_ACCOUNT_REQUESTS]
)
def test_a_malformed_account_request_is_refused(settings, name, path, body, status, says):
    annotator(username="taken")
    before = snapshot(settings)
    users_before = list(RaterProfile.objects.values_list("user__username", flat=True))
    answer = APIClient().post(path, body, format="json")
    assert_refused(answer, status, None, says)
    assert snapshot(settings) == before
    assert list(RaterProfile.objects.values_list("user__username", flat=True)) == users_before


@pytest.mark.parametrize(
    ("name", "header"),
    [("token keyword only", "Token"), ("token with spaces", "Token a b"), ("unknown token", "Token " + "0" * 40)],
)
def test_a_malformed_authorization_header_is_401(settings, name, header):
    before = snapshot(settings)
    answer = APIClient().post("/api/game/next", HTTP_AUTHORIZATION=header, format="json")
    assert_refused(answer, 401)
    assert snapshot(settings) == before


def test_consent_that_is_not_a_yes_is_refused(settings):
    user = annotator(consent=False)
    before = snapshot(settings)
    for agree in ("maybe", None, [True], 2):
        answer = token_client(user).post("/api/game/consent", {"agree": agree}, format="json")
        assert_refused(answer, 400, "invalid", "agree")
    assert snapshot(settings) == before


# --- The rating form (HTML) ------------------------------------------------------------------------------


@pytest.fixture
def browser_game(settings) -> tuple[Client, int, int]:
    """A logged-in game rater with an open assignment, and another rater's assignment id."""
    settings.RATINGGAME = {**settings.RATINGGAME, "MIN_SECONDS_PER_RATING": 0}
    for _ in range(3):
        CaptionPairFactory(pool=Pool.GAME)
    user = annotator(state=RaterState.GAME)
    client = Client()
    client.force_login(user)
    assert client.get("/play/game/").status_code == 200
    own = Assignment.objects.get(rater=user).pk
    other = token_client(annotator(state=RaterState.GAME)).post("/api/game/next", format="json").json()
    return client, own, other["assignment_id"]


@pytest.mark.parametrize(
    ("name", "form", "says"),
    [
        ("assignment not a number", {"assignment": "abc", "value": "3"}, "did not say which pair"),
        ("no assignment", {"value": "3"}, "did not say which pair"),
        ("value 9", {"assignment": "OWN", "value": "9"}, "Choose a rating from 1 to 5"),
        ("value empty", {"assignment": "OWN", "value": ""}, "Choose a rating from 1 to 5"),
        ("value 2.5", {"assignment": "OWN", "value": "2.5"}, "Choose a rating from 1 to 5"),
        ("foreign assignment", {"assignment": "OTHER", "value": "3"}, "served to someone else"),
        ("no such assignment", {"assignment": "424242", "value": "3"}, "no such pair"),
    ],
)
def test_a_malformed_rating_form_shows_a_clear_message(settings, browser_game, name, form, says):
    client, own, other = browser_game
    form = {k: str(own) if v == "OWN" else str(other) if v == "OTHER" else v for k, v in form.items()}
    before = snapshot(settings)
    answer = client.post("/play/game/", form, follow=True)
    # Post/redirect/get (issue: a reload never submits): the refusal is a redirect to a page
    # that shows the message, never a page a reload would post again.
    assert answer.redirect_chain and answer.redirect_chain[0][1] == 302
    assert answer.status_code == 200
    assert says in answer.content.decode()
    assert snapshot(settings) == before


def test_a_rating_form_without_the_csrf_token_is_refused(settings, browser_game):
    client, own, _ = browser_game
    strict = Client(enforce_csrf_checks=True)
    strict.cookies = client.cookies
    before = snapshot(settings)
    answer = strict.post("/play/game/", {"assignment": str(own), "value": "3"})
    assert answer.status_code == 403
    assert "CSRF" in answer.content.decode()
    assert snapshot(settings) == before


def test_feedback_pages_of_foreign_or_missing_assignments_are_refused(settings, browser_game):
    client, _, other = browser_game
    before = snapshot(settings)
    foreign = client.get(f"/play/feedback/{other}/")
    assert foreign.status_code == 403 and "someone else" in foreign.content.decode()
    missing = client.get("/play/feedback/424242/")
    assert missing.status_code == 404 and "no such pair" in missing.content.decode()
    assert snapshot(settings) == before
