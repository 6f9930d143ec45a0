"""The device path of image preprocessing agrees with the CPU path (scoring.priming.images).

On a GPU worker, JPEGs are decoded with nvJPEG and resized, cropped and normalised on the GPU;
every other format keeps the CPU path (Pillow, image_to_rgb, open_clip's preprocessing). This
machine has no GPU, so the device path runs here on the CPU: the same code, file reads, header
checks, batched decode_jpeg, TensorPreprocess and the fallbacks, all but the decode device.
The model is open_clip's ViT-B-32 (the bench's architecture) with random weights.
"""

import io

import numpy as np
import pytest
from PIL import Image

from scoring.pictures import StoredImage
from scoring.priming.clip_scorer import ClipScorer
from scoring.priming.images import device_decodable
from tests.scoring.priming.modules import needs_module

torch = needs_module("torch", reason="torch is not installed (model priming runs on worker machines)")
open_clip = needs_module("open_clip", reason="open_clip is not installed (model priming runs on workers)")

# The agreement goal for embeddings of one image through the two paths.
MIN_COSINE = 0.999


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return open_clip.create_model("ViT-B-32", pretrained=None).eval()


def scorers(model):
    cpu = ClipScorer.from_model(model, model_name="ViT-B-32")
    device = ClipScorer.from_model(model, model_name="ViT-B-32", tensor_decode=True, decode_workers=2)
    assert cpu.tensor_preprocess is None and device.tensor_preprocess is not None
    return cpu, device


def photo(seed: int, height: int = 480, width: int = 640) -> np.ndarray:
    """Smooth colour gradients plus noise, like the bench's synthetic photographs."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width]
    base = np.stack([(x * rng.uniform(0.1, 0.4) + y * rng.uniform(0.1, 0.4)) % 256 for _ in range(3)], axis=-1)
    return np.clip(base + rng.normal(0, 20, size=base.shape), 0, 255).astype(np.uint8)


def encoded(image: Image.Image, fmt: str, **options) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **options)
    return buffer.getvalue()


def stored(datas: dict[str, bytes]) -> list[tuple]:
    return [(key, StoredImage(read=lambda data=data: data), "a photo of a street", None) for key, data in datas.items()]


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


def test_jpegs_embed_alike_on_the_device_path_and_the_cpu_path(model):
    jpegs = {
        "baseline 4:2:0": encoded(Image.fromarray(photo(0)), "JPEG", quality=85),
        "progressive": encoded(Image.fromarray(photo(1)), "JPEG", quality=90, progressive=True),
        "4:4:4 portrait": encoded(Image.fromarray(photo(2, 640, 480)), "JPEG", subsampling=0),
        "odd size": encoded(Image.fromarray(photo(3, 301, 211)), "JPEG"),
        "small (upscaled)": encoded(Image.fromarray(photo(4, 120, 160)), "JPEG"),
        "grey": encoded(Image.fromarray(photo(5)[..., 0]), "JPEG"),
    }
    assert all(device_decodable(data) for data in jpegs.values())
    cpu, device = scorers(model)
    on_cpu, cpu_errors = cpu.image_features(stored(jpegs))
    on_device, device_errors = device.image_features(stored(jpegs))
    assert cpu_errors == device_errors == {}
    for key in jpegs:
        assert not np.array_equal(on_device[key], on_cpu[key]), key  # really another path
        assert cosine(on_device[key], on_cpu[key]) >= MIN_COSINE, key
    # And the scores the primes come from.
    plain = [s.clip_s for s in cpu.score_pairs(stored(jpegs))]
    fast = [s.clip_s for s in device.score_pairs(stored(jpegs))]
    assert fast == pytest.approx(plain, abs=2.5 * (1 - MIN_COSINE))


def cmyk_jpeg() -> bytes:
    return encoded(Image.fromarray(photo(6)).convert("CMYK"), "JPEG")


def rotated_jpeg() -> bytes:
    exif = Image.Exif()
    exif[0x0112] = 6  # shown after a 90° turn: decode_jpeg does not apply it on CUDA
    return encoded(Image.fromarray(photo(7)), "JPEG", exif=exif)


def rgba_png() -> bytes:
    pixels = np.dstack([photo(8, 240, 320), np.tile(np.linspace(0, 255, 320, dtype=np.uint8), (240, 1))])
    return encoded(Image.fromarray(pixels, mode="RGBA"), "PNG")


def sixteen_bit_png() -> bytes:
    return encoded(Image.fromarray(photo(9, 240, 320)[..., 1].astype(np.uint16) * 257), "PNG")


def test_other_formats_keep_the_cpu_path_unchanged(model):
    others = {
        "png": encoded(Image.fromarray(photo(10, 240, 320)), "PNG"),
        "16-bit png": sixteen_bit_png(),
        "cmyk jpeg": cmyk_jpeg(),
        "exif-rotated jpeg": rotated_jpeg(),
        "transparent png": rgba_png(),
        "palette gif": encoded(Image.fromarray(photo(11, 120, 160)).convert("P"), "GIF"),
    }
    assert not any(device_decodable(data) for data in others.values())
    cpu, device = scorers(model)
    on_cpu, _ = cpu.image_features(stored(others))
    on_device, _ = device.image_features(stored(others))
    for key in others:
        np.testing.assert_array_equal(on_device[key], on_cpu[key], err_msg=key)


def test_a_mixed_batch_keeps_each_image_in_its_place(model):
    datas = {
        "a": encoded(Image.fromarray(photo(12)), "JPEG"),
        "b": cmyk_jpeg(),
        "c": encoded(Image.fromarray(photo(13, 300, 400)), "JPEG"),
        "d": rgba_png(),
    }
    cpu, device = scorers(model)
    items = stored(datas)
    alone = {key: cpu.image_features([item])[0][key] for key, item in zip(datas, items, strict=True)}
    together, _ = device.image_features(items, batch_size=3)  # two chunks: the next one prepared ahead
    assert device.image_encoder_calls == 2
    for key in datas:
        assert cosine(together[key], alone[key]) >= MIN_COSINE, key


def test_bad_files_fail_only_their_own_pairs_with_the_cpu_paths_message(model, tmp_path):
    good = encoded(Image.fromarray(photo(14)), "JPEG")
    truncated = good[: good.index(b"\xff\xda") + 20]  # a readable header, then the data stops
    assert device_decodable(truncated)
    missing = tmp_path / "gone.jpg"

    def read_missing() -> bytes:
        return missing.read_bytes()

    items = [
        ("good", StoredImage(read=lambda: good), "a dog", None),
        ("truncated", StoredImage(read=lambda: truncated), "a dog", None),
        ("missing", StoredImage(read=read_missing), "a dog", None),
        ("plain loader", lambda: Image.fromarray(photo(15, 100, 100)), "a dog", None),
    ]
    cpu, device = scorers(model)
    expected = cpu.score_pairs(items)
    got = device.score_pairs(items)
    assert [s.error is None for s in got] == [True, False, False, True]
    assert got[1].error == expected[1].error and "truncated" in got[1].error
    assert got[2].error == expected[2].error and "FileNotFoundError" in got[2].error
    assert got[0].clip_s == pytest.approx(expected[0].clip_s, abs=2.5 * (1 - MIN_COSINE))
    assert got[3].clip_s == expected[3].clip_s  # a loader without bytes: the CPU path itself
