"""One open_clip model scoring (image, caption[, references]) items with CLIP-S / RefCLIP-S.

Worker code only: torch and open_clip are imported inside the functions that need them. The
formulas themselves live in `scoring.priming.clipscore` (numpy only); checkpoints are loaded
by `scoring.priming.clip_checkpoints.load_scorer`.

Images go through `image_to_rgb` before open_clip's preprocessing, so 16-bit, float,
CMYK, palette and transparent images reach the model as the 8-bit RGB picture a rater sees.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from scoring.priming.clipscore import CLIP_S_W, clip_s, prompt_for, ref_clip_s
from scoring.priming.scorer import short_error

if TYPE_CHECKING:
    import torch
    from PIL import Image

# Image modes holding more than 8 bits per sample (see image_to_rgb).
HIGH_DEPTH_MODES = ("I;16", "I;16L", "I;16B", "I;16N", "I", "F")
# Modes with an alpha channel (or palette transparency, checked separately).
ALPHA_MODES = ("RGBA", "RGBa", "LA", "La", "PA")
EXIF_ORIENTATION = 0x0112
DEFAULT_CACHE_SIZE = 4096  # image embeddings kept across calls: ~8 MB for 512-d float32
DEFAULT_BATCH_SIZE = 64


@dataclass(frozen=True)
class PairScore:
    """Raw scores of one (image, caption) item: CLIP-S, RefCLIP-S when it had references, or an error."""

    clip_s: float | None
    ref_clip_s: float | None = None
    error: str | None = None


# (image_key, image_loader, caption, references): image_key identifies the image (its sha256),
# image_loader returns a PIL image and is called at most once per distinct key.
ScoreItem = tuple[str, Callable[[], "Image.Image"], str, Sequence[str] | None]


# ---------------------------------------------------------------------------------------
# Images


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
        import io

        from PIL import ImageCms

        try:
            source = ImageCms.ImageCmsProfile(io.BytesIO(image.info["icc_profile"]))
            return ImageCms.profileToProfile(image, source, ImageCms.createProfile("sRGB"), outputMode="RGB")
        except (ImageCms.PyCMSError, OSError, ValueError):
            pass  # a broken embedded profile: fall back to the plain conversion
    return image.convert("RGB")


def _can_trim_text(model: torch.nn.Module) -> bool:
    from open_clip.model import CLIP

    return type(model) is CLIP and model.text_pool_type == "argmax" and model.attn_mask is not None


def encode_text_trimmed(model: torch.nn.Module, tokens: torch.Tensor) -> torch.Tensor:
    """`model.encode_text(tokens)` computed on the tokens up to the longest end-of-text in the batch.

    Exact, not an approximation: the text transformer is causal, so the output at the
    end-of-text position (the one pooled, `text.argmax(-1)`) never sees the padding after
    it. Cutting the padding of a 77-token context to the ~20 tokens of a caption saves most
    of the text tower's work. Mirrors open_clip 3.3 `CLIP.encode_text` step by step; only
    for plain `CLIP` models with argmax pooling and a causal mask (`_can_trim_text`).
    """
    import torch
    from open_clip.transformer import text_global_pool

    length = int(tokens.argmax(dim=-1).max()) + 1
    tokens = tokens[:, :length]
    cast_dtype = model.transformer.get_cast_dtype()
    x = model.token_embedding(tokens).to(cast_dtype)
    x = x + model.positional_embedding[:length].to(cast_dtype)
    x = model.transformer(x, attn_mask=model.attn_mask[:length, :length])
    x = model.ln_final(x)
    x = text_global_pool(x, tokens, model.text_pool_type)
    if model.text_projection is not None:
        linear = isinstance(model.text_projection, torch.nn.Linear)
        x = model.text_projection(x) if linear else x @ model.text_projection
    return x


class ClipScorer:
    """One open_clip model scoring (image, caption[, references]) items with CLIP-S / RefCLIP-S.

    Image embeddings are cached by image key (an LRU of `cache_size` entries), so an image
    captioned several times is decoded and encoded once. The counters (`images_decoded`,
    `image_encoder_calls`, `images_encoded`, `image_cache_hits`, `text_encoder_calls`,
    `texts_encoded`) make that visible. Not thread-safe: one scorer per worker process.
    """

    def __init__(
        self,
        model: torch.nn.Module,
        *,
        tokenizer: Callable[[list[str]], torch.Tensor],
        identity: dict[str, Any],
        w: float = CLIP_S_W,
        device: str = "cpu",
        precision: str = "fp32",
        cache_size: int = DEFAULT_CACHE_SIZE,
        batch_size: int = DEFAULT_BATCH_SIZE,
        decode_workers: int = 0,
        preprocess: Callable[[Image.Image], torch.Tensor] | None = None,
    ) -> None:
        import torch
        from open_clip.transform import PreprocessCfg, image_transform_v2

        self.model = model.to(device).eval()
        self.tokenizer = tokenizer
        if preprocess is None:
            preprocess = image_transform_v2(PreprocessCfg(**model.visual.preprocess_cfg), is_train=False)
        self.preprocess = preprocess
        self.identity = dict(identity)
        self.w = float(w)
        self.device = torch.device(device)
        self.precision = precision
        self.input_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(precision, torch.float32)
        self.cache_size = cache_size
        self.batch_size = batch_size
        self.decode_workers = decode_workers
        self._trim_text = _can_trim_text(model)
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self.images_decoded = 0
        self.image_encoder_calls = 0
        self.images_encoded = 0
        self.image_cache_hits = 0
        self.text_encoder_calls = 0
        self.texts_encoded = 0

    @classmethod
    def from_model(cls, model: torch.nn.Module, *, model_name: str, w: float = CLIP_S_W, **kwargs: Any) -> ClipScorer:
        """Wrap an already built open_clip model (benchmarks, experiments); weights are the caller's business."""
        import open_clip

        identity = {"model": model_name, "pretrained": None, "sha256": None, "w": float(w)}
        return cls(model, tokenizer=open_clip.get_tokenizer(model_name), identity=identity, w=w, **kwargs)

    def _inference(self) -> contextlib.AbstractContextManager:
        import torch

        stack = contextlib.ExitStack()
        stack.enter_context(torch.inference_mode())
        if self.precision == "amp":
            stack.enter_context(torch.autocast(self.device.type, dtype=torch.float16))
        return stack

    # Encoders ---------------------------------------------------------------------------

    def encode_image_tensors(self, tensors: Sequence[torch.Tensor], batch_size: int | None = None) -> np.ndarray:
        """Image embeddings (float32, not normalised) of preprocessed image tensors, in batches."""
        import torch

        size = batch_size or self.batch_size
        out = []
        with self._inference():
            for start in range(0, len(tensors), size):
                batch = torch.stack(list(tensors[start : start + size])).to(self.device, self.input_dtype)
                out.append(self.model.encode_image(batch).float().cpu().numpy())
                self.image_encoder_calls += 1
                self.images_encoded += len(batch)
        return np.concatenate(out) if out else np.zeros((0, 0), dtype=np.float32)

    def encode_images(self, images: Sequence[Image.Image], batch_size: int | None = None) -> np.ndarray:
        """Image embeddings (float32, not normalised) of PIL images, preprocessed as the model expects."""
        return self.encode_image_tensors([self.preprocess(image_to_rgb(image)) for image in images], batch_size)

    def encode_texts(self, texts: Sequence[str], batch_size: int | None = None) -> np.ndarray:
        """Text embeddings of "A photo depicts " + text, truncated to the model's context (77 tokens).

        Captions and references alike get the prefix, as in the reference CLIPScore code.
        Texts are batched by token length so the padding cut by `encode_text_trimmed` is small.
        """
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        tokens = self.tokenizer([prompt_for(t) for t in texts])
        order = tokens.argmax(dim=-1).argsort().tolist() if self._trim_text else list(range(len(texts)))
        size = batch_size or self.batch_size
        out: list[np.ndarray] = [np.empty(0)] * len(texts)
        with self._inference():
            for start in range(0, len(order), size):
                rows = order[start : start + size]
                batch = tokens[rows].to(self.device)
                encoded = encode_text_trimmed(self.model, batch) if self._trim_text else self.model.encode_text(batch)
                for row, vector in zip(rows, encoded.float().cpu().numpy(), strict=True):
                    out[row] = vector
                self.text_encoder_calls += 1
                self.texts_encoded += len(rows)
        return np.stack(out)

    # Image embedding cache --------------------------------------------------------------

    def _cached(self, key: str) -> np.ndarray | None:
        vector = self._cache.get(key)
        if vector is not None:
            self._cache.move_to_end(key)
        return vector

    def _remember(self, key: str, vector: np.ndarray) -> None:
        if self.cache_size <= 0:
            return
        self._cache[key] = vector
        self._cache.move_to_end(key)
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)

    def _prepare(self, loader: Callable[[], Image.Image]) -> tuple[torch.Tensor | None, str | None]:
        try:
            return self.preprocess(image_to_rgb(loader())), None
        except Exception as exc:  # noqa: BLE001 - a loader may fail in any way; only its pairs fail
            return None, f"image could not be decoded: {short_error(exc)}"

    def _prepared_chunks(
        self, pending: list[tuple[str, Callable[[], Image.Image]]], size: int
    ) -> Iterator[list[tuple[str, torch.Tensor | None, str | None]]]:
        """Decoded and preprocessed images, one encoder batch at a time.

        With decode workers, the next batch is decoded in threads (PIL and torch release the
        GIL) while the current one is encoded: on a GPU the forward pass is fast and decoding
        is the bottleneck. At most two batches are held at once.
        """
        chunks = [pending[i : i + size] for i in range(0, len(pending), size)]
        if self.decode_workers <= 0:
            for chunk in chunks:
                yield [(key, *self._prepare(loader)) for key, loader in chunk]
            return
        with ThreadPoolExecutor(max_workers=self.decode_workers) as pool:
            upcoming = [pool.submit(self._prepare, loader) for _, loader in chunks[0]] if chunks else []
            for n, chunk in enumerate(chunks):
                current = upcoming
                if n + 1 < len(chunks):
                    upcoming = [pool.submit(self._prepare, loader) for _, loader in chunks[n + 1]]
                yield [(key, *future.result()) for (key, _), future in zip(chunk, current, strict=True)]

    def _image_features(self, items: Sequence[ScoreItem], size: int) -> tuple[dict[str, np.ndarray], dict[str, str]]:
        features: dict[str, np.ndarray] = {}
        errors: dict[str, str] = {}
        pending: dict[str, Callable[[], Image.Image]] = {}
        for key, loader, _caption, _refs in items:
            if key in features or key in pending:
                continue
            cached = self._cached(key)
            if cached is not None:
                features[key] = cached
                self.image_cache_hits += 1
            else:
                pending[key] = loader
        self.images_decoded += len(pending)

        for chunk in self._prepared_chunks(list(pending.items()), size):
            errors.update((key, error) for key, _, error in chunk if error is not None)
            ready = [(key, tensor) for key, tensor, error in chunk if error is None]
            if ready:
                vectors = self.encode_image_tensors([tensor for _, tensor in ready], size)
                for (key, _), vector in zip(ready, vectors, strict=True):
                    features[key] = vector
                    self._remember(key, vector)
        return features, errors

    def image_features(
        self, items: Sequence[ScoreItem], batch_size: int | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, str]]:
        """Embeddings of the distinct images of `items` by image key, and decode errors by key.

        Cached embeddings are reused (no decoding); new ones are computed in batches and cached.
        """
        return self._image_features(items, batch_size or self.batch_size)

    # Scoring ----------------------------------------------------------------------------

    def score_pairs(self, items: Sequence[ScoreItem], batch_size: int | None = None) -> list[PairScore]:
        """CLIP-S (and RefCLIP-S where references are given) for each item, in order.

        Each distinct image is decoded and encoded once (and reused from the cache on later
        calls); each distinct text is encoded once. An image that fails to load or decode
        gives its items a `PairScore` with `error` set; the other items are still scored.
        """
        items = list(items)
        size = batch_size or self.batch_size
        image_features, image_errors = self._image_features(items, size)

        scored = [i for i, item in enumerate(items) if item[0] in image_features]
        texts: dict[str, int] = {}
        for i in scored:
            for text in [items[i][2], *(items[i][3] or ())]:
                texts.setdefault(text, len(texts))
        text_features = self.encode_texts(list(texts), size)

        results: list[PairScore] = [
            PairScore(None, None, image_errors.get(item[0], "image not scored")) for item in items
        ]
        if not scored:
            return results
        images = np.stack([image_features[items[i][0]] for i in scored])
        captions = np.stack([text_features[texts[items[i][2]]] for i in scored])
        plain = clip_s(images, captions, self.w)
        with_refs = [j for j, i in enumerate(scored) if items[i][3]]
        refs = [text_features[[texts[r] for r in items[scored[j]][3]]] for j in with_refs]
        refined = ref_clip_s(images[with_refs], captions[with_refs], refs, self.w) if with_refs else []
        ref_by_item = dict(zip((scored[j] for j in with_refs), refined, strict=True))
        for j, i in enumerate(scored):
            value, ref_value = float(plain[j]), ref_by_item.get(i)
            if not np.isfinite(value) or (ref_value is not None and not np.isfinite(ref_value)):
                results[i] = PairScore(None, None, "non-finite embedding (numerical overflow in the model?)")
            else:
                results[i] = PairScore(value, None if ref_value is None else float(ref_value))
        return results
