"""How a stored image reaches a priming model: as the picture a rater's browser shows.

Two ways in, one picture:

- the CPU path, for every format: Pillow decodes the file and ``image_to_rgb`` turns it into
  the 8-bit RGB picture a browser shows (EXIF orientation, 16-bit and float grey, CMYK,
  transparency); each model then applies its own preprocessing;
- the device path, for the common case only (an 8-bit YCbCr or grey JPEG that EXIF does not
  rotate: ``device_decodable``): the file's bytes are decoded by ``decode_jpegs`` (nvJPEG on
  CUDA, batched) and resized, cropped and normalised on the same device by
  ``TensorPreprocess``, so a GPU's forward pass no longer waits for the CPU to decode.
  Everything else keeps the CPU path.

``StoredImage`` carries a file's bytes to both: calling it opens them with Pillow (the
loader every scorer takes), and the device path reads the bytes itself. Worker code only:
torch and torchvision are imported inside the functions that need them.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from scoring.priming.scorer import short_error

if TYPE_CHECKING:
    import torch
    from PIL import Image

# Image modes holding more than 8 bits per sample (see image_to_rgb).
HIGH_DEPTH_MODES = ("I;16", "I;16L", "I;16B", "I;16N", "I", "F")
# Modes with an alpha channel (or palette transparency, checked separately).
ALPHA_MODES = ("RGBA", "RGBa", "LA", "La", "PA")
EXIF_ORIENTATION = 0x0112


@dataclass(frozen=True)
class StoredImage:
    """An image file's bytes, read on demand; calling it opens them with Pillow."""

    read: Callable[[], bytes]

    def __call__(self) -> Image.Image:
        return open_image(self.read())


def open_image(data: bytes) -> Image.Image:
    from PIL import Image as PILImage

    image = PILImage.open(io.BytesIO(data))
    image.load()
    return image


def load_rgb(loader: Callable[[], Image.Image]) -> tuple[Image.Image | None, str | None]:
    """(the 8-bit RGB picture of ``loader``'s image, None), or (None, why it could not be had):
    a loader may fail in any way, and only its own pairs fail with it."""
    try:
        return image_to_rgb(loader()), None
    except Exception as exc:  # noqa: BLE001 - see above
        return None, f"image could not be decoded: {short_error(exc)}"


# ---------------------------------------------------------------------------------------
# The CPU path


def _high_depth_to_l(image: Image.Image) -> Image.Image:
    """An 8-bit grey image ("L") from a 16-bit, 32-bit integer or float grey image.

    Pillow's own conversion of these modes to RGB clips every value above 255, which turns
    a 16-bit photograph almost white. Instead the samples are scaled to 0..255 by their
    full scale: 65535 for the 16-bit modes ("I;16*"), and for "I" (how Pillow may present
    a 16-bit PNG or TIFF) when every value lies in 0..65535; 1.0 for a float ("F") image
    whose values lie in 0..1. Anything else (negative or larger values) is stretched over
    its actual range, min to max.
    """
    from PIL import Image as PILImage

    values = np.asarray(image, dtype=np.float64)
    finite = values[np.isfinite(values)]
    low, high = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 0.0)
    if image.mode.startswith("I;16") or (image.mode == "I" and low >= 0 and high <= 65535):
        low, scale = 0.0, 65535.0
    elif image.mode == "F" and low >= 0 and high <= 1:
        low, scale = 0.0, 1.0
    else:
        scale = high - low or 1.0
    scaled = np.nan_to_num((values - low) * (255.0 / scale), nan=0.0, posinf=255.0, neginf=0.0)
    return PILImage.fromarray(np.clip(np.rint(scaled), 0, 255).astype(np.uint8), mode="L")


def image_to_rgb(image: Image.Image) -> Image.Image:
    """The 8-bit RGB picture a rater's browser shows for ``image``, as the model should see it.

    - EXIF orientation is applied (browsers rotate JPEGs by it);
    - 16-bit / 32-bit / float grey ("I;16", "I", "F"): scaled to 8 bits (``_high_depth_to_l``);
    - transparency ("RGBA", "LA", "PA", "P" with a transparent colour, premultiplied modes):
      composited on white, not dropped (dropping alpha reveals whatever colour the hidden
      pixels happen to hold, often black);
    - "CMYK": through the embedded ICC profile when there is one, else Pillow's conversion;
    - "1", "L", "P", "YCbCr", "LAB", "HSV" and the rest: Pillow's conversion to RGB.
    """
    from PIL import Image as PILImage
    from PIL import ImageOps

    if image.getexif().get(EXIF_ORIENTATION, 1) != 1:
        image = ImageOps.exif_transpose(image)
    mode = image.mode
    if mode == "RGB":
        return image
    if mode in HIGH_DEPTH_MODES:
        return _high_depth_to_l(image).convert("RGB")
    if mode in ALPHA_MODES or (mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        white = PILImage.new("RGBA", rgba.size, (255, 255, 255, 255))
        return PILImage.alpha_composite(white, rgba).convert("RGB")
    if mode == "CMYK" and image.info.get("icc_profile"):
        from PIL import ImageCms

        try:
            source = ImageCms.ImageCmsProfile(io.BytesIO(image.info["icc_profile"]))
            return ImageCms.profileToProfile(image, source, ImageCms.createProfile("sRGB"), outputMode="RGB")
        except (ImageCms.PyCMSError, OSError, ValueError):
            pass  # a broken embedded profile: fall back to the plain conversion
    return image.convert("RGB")


# ---------------------------------------------------------------------------------------
# The device path


def device_decodable(data: bytes) -> bool:
    """Whether ``decode_jpegs`` shows the same picture as ``image_to_rgb`` for these bytes.

    True for an 8-bit JPEG in YCbCr or grey whose EXIF does not rotate it (decode_jpeg applies
    EXIF orientation on the CPU only). CMYK JPEGs, every other format, and anything Pillow
    cannot even open keep the CPU path, which also gives the error message of a bad file.
    Only the header is read.
    """
    from PIL import Image as PILImage

    try:
        with PILImage.open(io.BytesIO(data)) as image:
            rotated = image.getexif().get(EXIF_ORIENTATION, 1) != 1
            return image.format == "JPEG" and image.mode in ("RGB", "L") and not rotated
    except Exception:  # noqa: BLE001 - any unreadable header: the CPU path reports it
        return False


def decode_jpegs(datas: Sequence[bytes], device: str | torch.device) -> list[torch.Tensor | None]:
    """uint8 RGB tensors (3, H, W) on ``device``, one per JPEG; None where the decoder refused one.

    On CUDA, one batched nvJPEG call for all of them (torchvision's ``decode_jpeg`` with a
    list), from pinned host memory. A batched call returns nothing when one image fails, so a
    failed batch is decoded again image by image; a refused image goes back to the CPU path.
    """
    import warnings

    import torch
    from torchvision.io import ImageReadMode, decode_jpeg

    if not datas:
        return []
    device = torch.device(device)
    inputs = [torch.frombuffer(bytearray(data), dtype=torch.uint8) for data in datas]
    if device.type == "cuda":
        inputs = [tensor.pin_memory() for tensor in inputs]
    with warnings.catch_warnings():
        # torchvision 0.29 points to TorchCodec for decoding; decode_jpeg is still its nvJPEG path.
        warnings.simplefilter("ignore", UserWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            return list(decode_jpeg(inputs, mode=ImageReadMode.RGB, device=device))
        except RuntimeError:
            decoded: list[torch.Tensor | None] = []
            for tensor in inputs:
                try:
                    decoded.append(decode_jpeg(tensor, mode=ImageReadMode.RGB, device=device))
                except RuntimeError:
                    decoded.append(None)
            return decoded


class TensorPreprocess:
    """open_clip's inference preprocessing on uint8 image tensors, on whatever device they are.

    Mirrors ``open_clip.transform.image_transform(is_train=False)`` for the resize modes a
    CLIP checkpoint uses in practice: "shortest" with a square size (resize the short side,
    centre crop) and "squash" (resize to the size); ``supports`` says whether a model's
    ``preprocess_cfg`` is one of them. open_clip's own transform cannot be reused here: it
    ends with ToTensor over a PIL image. Resizing is torchvision's (transforms v2), bicubic or
    bilinear with antialiasing like Pillow's; it works in float and clamps to [0, 1] where
    Pillow rounds to 8 bits, so the two paths differ only by that rounding.
    """

    def __init__(self, cfg: dict, dtype: torch.dtype) -> None:
        from torchvision.transforms import InterpolationMode

        size = cfg.get("size", 224)
        self.size = [size, size] if isinstance(size, int) else list(size)[-2:]
        self.squash = cfg.get("resize_mode", "shortest") == "squash"
        bilinear = cfg.get("interpolation", "bicubic") == "bilinear"
        self.interpolation = InterpolationMode.BILINEAR if bilinear else InterpolationMode.BICUBIC
        self.mean = cfg["mean"]
        self.std = cfg["std"]
        self.dtype = dtype

    @staticmethod
    def supports(cfg: dict) -> bool:
        size = cfg.get("size", 224)
        square = isinstance(size, int) or len(set(list(size)[-2:])) == 1
        mode = cfg.get("resize_mode", "shortest")
        return "mean" in cfg and "std" in cfg and (mode == "squash" or (mode == "shortest" and square))

    def __call__(self, images: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        """(3, size, size) normalised tensors of ``dtype``; images of one shape are resized together."""
        import torch
        from torchvision.transforms.v2 import functional as F

        by_shape: dict[tuple[int, ...], list[int]] = {}
        for index, image in enumerate(images):
            by_shape.setdefault(tuple(image.shape), []).append(index)
        out: list[torch.Tensor] = [torch.empty(0)] * len(images)
        for indices in by_shape.values():
            batch = torch.stack([images[i] for i in indices]).float().div_(255.0)
            target = self.size if self.squash else [self.size[0]]
            batch = F.resize(batch, target, interpolation=self.interpolation, antialias=True).clamp_(0.0, 1.0)
            if not self.squash:
                batch = F.center_crop(batch, self.size)
            batch = F.normalize(batch, self.mean, self.std).to(self.dtype)
            for i, tensor in zip(indices, batch, strict=True):
                out[i] = tensor
        return out
