"""import_pairs: good manifests import; every kind of bad input is named and nothing is written."""

import io
import json
import struct
import zlib

import pytest
from django.core.management import CommandError, call_command
from PIL import Image as PILImage

from ratinggame.models import CaptionPair, Image, Pool, PrimingStatus
from tests.factories import png_bytes

pytestmark = pytest.mark.django_db


@pytest.fixture
def folder(tmp_path):
    images = tmp_path / "images"
    images.mkdir()
    for i in range(1, 4):
        (images / f"ok{i}.png").write_bytes(png_bytes(i))
    return images


def write_csv(tmp_path, text: str, name="manifest.csv"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def run_import(manifest, images, *args):
    out, err = io.StringIO(), io.StringIO()
    call_command("import_pairs", str(manifest), "--images", str(images), *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def import_error(manifest, images, *args) -> str:
    with pytest.raises(CommandError) as excinfo:
        run_import(manifest, images, *args)
    assert CaptionPair.objects.count() == 0, "a failed import must write nothing"
    assert Image.objects.count() == 0
    return str(excinfo.value)


def test_csv_manifest_imports_pairs_and_stores_identical_images_once(tmp_path, folder):
    (folder / "copy_of_ok1.png").write_bytes(png_bytes(1))
    manifest = write_csv(
        tmp_path,
        "image,caption,source,references\n"
        "ok1.png,a red square,coco,a square|a red block\n"
        "ok1.png,a blue square,pythia,\n"
        "copy_of_ok1.png,a green square,other,\n"
        "ok2.png,  a   spaced   caption ,glacnet,\n",
    )
    out, _ = run_import(manifest, folder)
    assert "Imported 4 pair(s)" in out
    assert Image.objects.count() == 2  # ok1.png and its identical copy are one image
    pair = CaptionPair.objects.get(caption="a red square")
    assert pair.references == ["a square", "a red block"]
    assert pair.pool == Pool.GAME
    assert CaptionPair.objects.get(source="glacnet").caption == "a spaced caption"


def test_jsonl_manifest_with_tutorial_rows(tmp_path, folder):
    rows = [
        {"image": "ok1.png", "caption": "first", "expert_rating": 5, "explanation": "all there"},
        {"image": "ok2.png", "caption": "second", "expert_rating": "2", "explanation": "errors"},
    ]
    manifest = tmp_path / "m.jsonl"
    manifest.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    run_import(manifest, folder, "--pool", "tutorial")
    pairs = list(CaptionPair.objects.order_by("display_order"))
    assert [p.caption for p in pairs] == ["first", "second"]
    assert [p.expert_rating for p in pairs] == [5, 2]
    assert all(p.pool == Pool.TUTORIAL for p in pairs)
    assert pairs[0].display_order < pairs[1].display_order


def test_rating_guide_examples_are_imported_as_guide_pairs_that_are_never_primed(tmp_path, folder):
    manifest = write_csv(
        tmp_path,
        "image,caption,expert_rating,explanation,pool\n"
        "ok1.png,a red square on grey,3,The square is right but not where it is.,guide\n"
        "ok2.png,a game pair,,,game\n",
    )
    run_import(manifest, folder)
    example = CaptionPair.objects.get(pool=Pool.GUIDE)
    assert (example.caption, example.expert_rating) == ("a red square on grey", 3)
    assert example.priming_status == PrimingStatus.NOT_NEEDED


def test_dry_run_writes_nothing(tmp_path, folder):
    manifest = write_csv(tmp_path, "image,caption\nok1.png,a caption\n")
    out, _ = run_import(manifest, folder, "--dry-run")
    assert "1 of 1 row(s) valid" in out
    assert CaptionPair.objects.count() == 0
    assert Image.objects.count() == 0


def truncated_png() -> bytes:
    return png_bytes(7, size=(64, 64))[:-40]


def bomb_png(width=30000, height=30000) -> bytes:
    """A PNG header that claims a huge image (a decompression bomb) with a tiny body."""

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\x00" * 10))
        + chunk(b"IEND", b"")
    )


def animated_gif() -> bytes:
    frames = [PILImage.new("RGB", (8, 8), c) for c in ("red", "blue", "green")]
    buffer = io.BytesIO()
    frames[0].save(buffer, format="GIF", save_all=True, append_images=frames[1:])
    return buffer.getvalue()


def tiff_bytes() -> bytes:
    buffer = io.BytesIO()
    PILImage.new("RGB", (8, 8)).save(buffer, format="TIFF")
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"", "the file is empty"),
        (b"this is not an image at all", "not an image"),
        (truncated_png(), "damaged or truncated"),
        (bomb_png(), "the image is too large"),
        (animated_gif(), "animated images are not supported"),
        (tiff_bytes(), "cannot be shown in a browser"),
    ],
    ids=["zero-byte", "not-an-image", "truncated", "decompression-bomb", "animated", "tiff"],
)
def test_bad_image_files_are_named_and_nothing_is_imported(tmp_path, folder, content, expected):
    (folder / "bad.png").write_bytes(content)
    manifest = write_csv(tmp_path, "image,caption\nok1.png,good row\nbad.png,bad row\n")
    message = import_error(manifest, folder)
    assert "row 3" in message
    assert "bad.png" in message
    assert expected in message


def test_image_over_byte_limit(tmp_path, folder, settings):
    settings.RATINGGAME = {**settings.RATINGGAME, "MAX_IMAGE_BYTES": 100}
    manifest = write_csv(tmp_path, "image,caption\nok1.png,too big\n")
    assert "over the limit of 100 bytes" in import_error(manifest, folder)


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        ("missing.png,a caption", "image file 'missing.png' not found"),
        ("../secret.png,a caption", "must be a file name inside the images folder"),
        ("/etc/passwd,a caption", "must be a file name inside the images folder"),
        (",a caption", "the image column is empty"),
        ("ok1.png,", "caption is empty"),
        ("ok1.png,   ", "caption is empty"),
        ("ok1.png," + "x" * 501, "over the limit of 500"),
        ("ok1.png,a caption,nowhere", "unknown source 'nowhere'"),
        ("ok1.png,a caption,coco,,6", "expert_rating 6 is outside 1-5"),
        ("ok1.png,a caption,coco,,0", "expert_rating 0 is outside 1-5"),
        ("ok1.png,a caption,coco,,3.5", "not a whole number"),
        ("ok1.png,a caption,coco,,,,arena", "unknown pool 'arena'"),
        ("ok1.png,a caption,coco,,,,tutorial", "tutorial pairs need an expert_rating"),
        ("ok1.png,a caption,coco,,4,,probation", "probation pairs need an explanation"),
        ("ok1.png,a caption,coco,,,why,control", "control pairs need an expert_rating"),
        ("ok1.png,a caption,coco,,,,guide", "guide pairs need an expert_rating"),
        ("ok1.png,a caption,coco,,2,,guide", "guide pairs need an explanation"),
        ("ok1.png,a caption,coco,,,,,", "has 8 fields, the header has 7"),
    ],
)
def test_bad_rows_are_named_with_reason(tmp_path, folder, row, expected):
    row += "," * max(0, 6 - row.count(","))  # pad to the header's 7 fields
    manifest = write_csv(
        tmp_path,
        "image,caption,source,references,expert_rating,explanation,pool\nok2.png,fine,coco,,,,game\n" + row + "\n",
    )
    message = import_error(manifest, folder)
    assert "row 3" in message
    assert expected in message


def test_control_pairs_are_imported_with_their_expert_rating_and_an_optional_explanation(tmp_path, folder):
    manifest = write_csv(
        tmp_path,
        "image,caption,expert_rating,explanation,pool\n"
        "ok1.png,a red square on grey,4,Placed but no event,control\n"
        "ok2.png,a cat,1,,control\n",
    )
    out, _ = run_import(manifest, folder)
    assert "Imported 2 pair(s)" in out
    controls = CaptionPair.objects.filter(pool=Pool.CONTROL).order_by("expert_rating")
    assert [(p.expert_rating, p.explanation) for p in controls] == [(1, ""), (4, "Placed but no event")]
    # Never primed, never in the serving order of game pairs.
    assert set(controls.values_list("priming_status", flat=True)) == {PrimingStatus.NOT_NEEDED}
    assert not CaptionPair.objects.game().exists()


def test_duplicate_rows_in_manifest(tmp_path, folder):
    (folder / "same.png").write_bytes(png_bytes(1))
    manifest = write_csv(tmp_path, "image,caption\nok1.png,a cat\nsame.png,a  cat\n")
    message = import_error(manifest, folder)
    assert "row 3: duplicate pair: same image and caption as row 2" in message


def test_duplicate_of_pair_already_in_database(tmp_path, folder):
    run_import(write_csv(tmp_path, "image,caption\nok1.png,a cat\n", "first.csv"), folder)
    with pytest.raises(CommandError, match=r"already in the database as pair #\d+"):
        run_import(write_csv(tmp_path, "image,caption\nok1.png,a cat\n", "second.csv"), folder)
    assert CaptionPair.objects.count() == 1


def test_skip_invalid_imports_good_rows_and_reports_the_rest(tmp_path, folder):
    manifest = write_csv(tmp_path, "image,caption\nok1.png,good one\nmissing.png,bad one\nok2.png,good two\n")
    out, err = run_import(manifest, folder, "--skip-invalid")
    assert "Imported 2 pair(s)" in out
    assert "skipped row 3: image file 'missing.png' not found" in err
    assert set(CaptionPair.objects.values_list("caption", flat=True)) == {"good one", "good two"}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("image,caption\nok1.png,caf\xe9\n".encode("latin-1"), "not UTF-8 text: byte 0xe9 at line 2"),
        (b"picture,caption\nok1.png,x\n", "missing required column(s): image"),
        (b"image,caption,rating\nok1.png,x,3\n", "unknown column(s): rating"),
        (b"image,caption,caption\nok1.png,x,y\n", "the column 'caption' appears twice"),
        (b"", "the manifest is empty"),
        (b"image,caption\n", "no data rows"),
    ],
    ids=["latin-1", "missing-column", "unknown-column", "duplicate-column", "empty", "header-only"],
)
def test_malformed_manifests(tmp_path, folder, raw, expected):
    manifest = tmp_path / "bad.csv"
    manifest.write_bytes(raw)
    assert expected in import_error(manifest, folder)


def test_malformed_jsonl_line(tmp_path, folder):
    manifest = tmp_path / "bad.jsonl"
    manifest.write_text('{"image": "ok1.png", "caption": "fine"}\n{"image": "ok2.png", caption\n', encoding="utf-8")
    assert "row 2: not valid JSON" in import_error(manifest, folder)


def test_unknown_pool_option_is_rejected(tmp_path, folder):
    manifest = write_csv(tmp_path, "image,caption\nok1.png,x\n")
    with pytest.raises(CommandError, match="invalid choice: 'arena'"):
        run_import(manifest, folder, "--pool", "arena")


def test_missing_images_folder(tmp_path):
    manifest = write_csv(tmp_path, "image,caption\nok1.png,x\n")
    with pytest.raises(CommandError, match="does not exist"):
        run_import(manifest, tmp_path / "nope")


def test_unusual_but_valid_images_are_accepted(tmp_path, folder):
    cmyk = io.BytesIO()
    PILImage.new("CMYK", (16, 16), (0, 128, 255, 0)).save(cmyk, format="JPEG")
    sixteen = io.BytesIO()
    PILImage.new("I;16", (16, 16), 40000).save(sixteen, format="PNG")
    (folder / "cmyk.jpg").write_bytes(cmyk.getvalue())
    (folder / "deep.png").write_bytes(sixteen.getvalue())
    manifest = write_csv(tmp_path, "image,caption\ncmyk.jpg,cmyk photo\ndeep.png,16-bit photo\n")
    run_import(manifest, folder)
    assert Image.objects.count() == 2
    assert Image.objects.get(original_name="cmyk.jpg").file.name.endswith(".jpg")


def stored_files(settings) -> list[str]:
    media = settings.MEDIA_ROOT
    return sorted(str(p.relative_to(media)) for p in media.rglob("*") if p.is_file()) if media.exists() else []


def test_an_import_that_fails_half_way_leaves_no_file_the_site_serves_and_the_next_one_reuses_the_names(
    tmp_path, folder, monkeypatch, settings, client
):
    """Issue 15: a killed import left image files with no row, and the next run stored suffixed
    copies. Files are named by content and written before the rows: the failed run's files are
    not served, the next run lands on the same names, and the sweep removes what no row names."""
    from datetime import timedelta

    import ratinggame.pairs.importing as importing
    from ratinggame.pairs.services import media_orphans_delete

    real_pair_create = importing.pair_create
    created = []

    def dying_pair_create(**kwargs):
        if len(created) == 2:
            raise RuntimeError("the process died here")
        created.append(real_pair_create(**kwargs))
        return created[-1]

    monkeypatch.setattr(importing, "pair_create", dying_pair_create)
    manifest = write_csv(tmp_path, "image,caption\nok1.png,x\nok2.png,y\nok3.png,z\n")
    with pytest.raises(RuntimeError):
        run_import(manifest, folder)
    assert Image.objects.count() == 0 and CaptionPair.objects.count() == 0
    left = stored_files(settings)
    assert len(left) == 3  # written before the rows that never came
    for name in left:
        assert client.get(f"/media/{name}").status_code == 404

    monkeypatch.setattr(importing, "pair_create", real_pair_create)
    run_import(manifest, folder)
    assert stored_files(settings) == left == sorted(Image.objects.values_list("file", flat=True))
    for name in left:
        assert client.get(f"/media/{name}").status_code == 200
    # Nothing is left for the sweep to take; a file with no row is taken once old enough.
    assert media_orphans_delete(older_than=timedelta(0)) == []
    orphan = settings.MEDIA_ROOT / "images" / "ab" / ("ab" + "0" * 62 + ".png")
    orphan.parent.mkdir(parents=True, exist_ok=True)
    orphan.write_bytes(png_bytes(77))
    assert media_orphans_delete(older_than=timedelta(hours=1)) == []
    assert media_orphans_delete(older_than=timedelta(0)) == [f"images/ab/{orphan.name}"]
    assert stored_files(settings) == left


def test_image_over_pixel_limit_but_under_pillows_own_guard(tmp_path, folder, settings):
    settings.RATINGGAME = {**settings.RATINGGAME, "MAX_IMAGE_PIXELS": 1000}
    (folder / "wide.png").write_bytes(png_bytes(9, size=(50, 50)))
    manifest = write_csv(tmp_path, "image,caption\nwide.png,x\n")
    assert "50x50 = 2,500 pixels, over the limit of 1,000 pixels" in import_error(manifest, folder)


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        ({"image": "ok1.png", "caption": "a cat \ud800 on a mat"}, "caption contains an unpaired surrogate"),
        ({"image": "ok\udc001.png", "caption": "a cat"}, "image file name contains an unpaired surrogate"),
        (
            {"image": "ok1.png", "caption": "a cat", "references": ["fine", "bad \udfff"]},
            "reference 2 contains an unpaired surrogate",
        ),
        (
            {"image": "ok1.png", "caption": "a cat", "pool": "tutorial", "expert_rating": 3, "explanation": "\ud83d"},
            "explanation contains an unpaired surrogate",
        ),
        ({"image": "ok1.png", "caption": "a cat", "references": ["y" * 501]}, "reference 1 is 501 characters"),
        ({"image": ["ok1.png"], "caption": "a cat"}, "the image column must be a file name, got list"),
        ({"image": "ok1.png", "caption": "a cat", "explanation": {"why": "x"}}, "explanation must be text"),
    ],
    ids=["caption", "image-name", "reference", "explanation", "long-reference", "image-list", "explanation-dict"],
)
def test_jsonl_fields_that_cannot_be_stored_are_named(tmp_path, folder, record, expected):
    # json.dumps writes lone surrogates as \ud800 escapes: valid JSON, invalid Unicode text.
    lines = [json.dumps({"image": "ok2.png", "caption": "fine"}), json.dumps(record)]
    manifest = tmp_path / "bad.jsonl"
    manifest.write_text("\n".join(lines) + "\n", encoding="utf-8")
    message = import_error(manifest, folder)
    assert "row 2" in message and expected in message


def test_unreadable_image_file_is_named(tmp_path, folder, monkeypatch):
    # The suite may run as root, for whom chmod 000 still reads: refuse the open instead.
    from pathlib import Path

    real_open = Path.open

    def refusing_open(self, *args, **kwargs):
        if self.name == "ok1.png":
            raise PermissionError(13, "Permission denied", str(self))
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", refusing_open)
    manifest = write_csv(tmp_path, "image,caption\nok2.png,fine\nok1.png,a cat\n")
    message = import_error(manifest, folder)
    assert "row 3: image file 'ok1.png' cannot be read (permission denied)" in message


# --- Issue 15: inputs that answered with a traceback ----------------------------------------------


def test_a_symbolic_link_loop_in_the_images_folder_is_named(tmp_path, folder):
    (folder / "loop.png").symlink_to(folder / "loop.png")
    (folder / "a").symlink_to(folder / "b")
    (folder / "b").symlink_to(folder / "a")
    manifest = write_csv(tmp_path, "image,caption\nok1.png,fine\nloop.png,x\na/c.png,y\n")
    message = import_error(manifest, folder)
    assert "row 3: image file 'loop.png' cannot be read" in message
    assert "row 4: image file 'a/c.png' cannot be read" in message


def test_an_images_folder_that_is_a_symbolic_link_loop_is_named(tmp_path):
    images = tmp_path / "images"
    images.symlink_to(images)
    manifest = write_csv(tmp_path, "image,caption\nok1.png,x\n")
    assert "images folder" in import_error(manifest, images)


def test_a_file_name_longer_than_the_file_system_allows_is_named(tmp_path, folder):
    manifest = write_csv(tmp_path, f"image,caption\nok1.png,fine\n{'n' * 300}.png,x\n")
    message = import_error(manifest, folder)
    assert "row 3: image file name 'nnnn" in message and "longer than 255 bytes" in message


def test_a_nul_byte_in_an_image_name_is_named(tmp_path, folder):
    manifest = tmp_path / "bad.jsonl"
    manifest.write_text(json.dumps({"image": "ok1\u0000.png", "caption": "x"}) + "\n", encoding="utf-8")
    assert "row 1: image file name contains a NUL character" in import_error(manifest, folder)


@pytest.mark.parametrize("order", ["2147483648", "9" * 23])
def test_a_display_order_out_of_range_is_refused_by_the_dry_run_too(tmp_path, folder, order):
    manifest = write_csv(tmp_path, f"image,caption,display_order\nok1.png,x,{order}\n")
    for args in ([], ["--dry-run"]):
        assert "row 2: display_order" in import_error(manifest, folder, *args)
    ok = write_csv(tmp_path, "image,caption,display_order\nok1.png,x,2147483647\n", name="ok.csv")
    run_import(ok, folder)
    assert CaptionPair.objects.get().display_order == 2**31 - 1


def test_rows_numbered_after_the_last_display_order_never_pass_the_range(tmp_path, folder):
    run_import(write_csv(tmp_path, "image,caption,display_order\nok1.png,x,2147483647\n"), folder)
    manifest = write_csv(tmp_path, "image,caption\nok2.png,y\n", name="more.csv")
    with pytest.raises(CommandError, match="row 2: no display_order is left after 2,147,483,647"):
        run_import(manifest, folder)
    assert CaptionPair.objects.count() == 1


def test_jsonl_lines_end_at_newlines_only(tmp_path, folder):
    manifest = tmp_path / "pairs.jsonl"
    lines = [{"image": "ok1.png", "caption": "one\u2028line"}, {"image": "ok2.png", "caption": "next\u0085line"}]
    manifest.write_text("\r\n".join(json.dumps(line, ensure_ascii=False) for line in lines) + "\n", encoding="utf-8")
    run_import(manifest, folder)
    assert sorted(CaptionPair.objects.values_list("caption", flat=True)) == ["next line", "one line"]
