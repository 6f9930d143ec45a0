"""How a stored image reaches a priming model: as the picture a rater's browser shows.

Two ways in, one picture:

- the CPU path, for every format: Pillow decodes the file and ``scoring.pictures.image_to_rgb``
  turns it into the 8-bit RGB picture a browser shows (EXIF orientation, 16-bit and float grey,
  CMYK, transparency); each model then applies its own preprocessing (``load_rgb``);
- the device path, for the common case only (an 8-bit YCbCr or grey JPEG that EXIF does not
  rotate: ``device_decodable``): the file's bytes are decoded by ``decode_jpegs`` (nvJPEG on
  CUDA, batched) and resized, cropped and normalised on the same device by
  ``TensorPreprocess``, so a GPU's forward pass does not wait for the CPU to decode.
  Everything else keeps the CPU path.

A ``scoring.pictures.StoredImage`` carries a file's bytes to both: calling it opens them with
Pillow (the loader every scorer takes), and the device path reads the bytes itself. Worker
code only: torch and torchvision are imported inside the functions that need them.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from PIL import Image as PILImage

from scoring.pictures import EXIF_ORIENTATION, image_to_rgb
from scoring.priming.scorer import short_error

if TYPE_CHECKING:
    import torch


def load_rgb(loader: Callable[[], PILImage.Image]) -> tuple[PILImage.Image | None, str | None]:
    """(the 8-bit RGB picture of ``loader``'s image, None), or (None, why it could not be had):
    a loader may fail in any way, and only its own pairs fail with it."""
    try:
        return image_to_rgb(loader()), None
    except Exception as exc:  # noqa: BLE001 - see above
        return None, f"image could not be decoded: {short_error(exc)}"


# ---------------------------------------------------------------------------------------
# The device path


def device_decodable(data: bytes) -> bool:
    """Whether ``decode_jpegs`` shows the same picture as ``image_to_rgb`` for these bytes.

    True for an 8-bit JPEG in YCbCr or grey whose EXIF does not rotate it (decode_jpeg applies
    EXIF orientation on the CPU only). CMYK JPEGs, every other format, and anything Pillow
    cannot even open keep the CPU path, which also gives the error message of a bad file.
    Only the header is read.
    """
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
