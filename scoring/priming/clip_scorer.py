"""One open_clip model scoring (image, caption[, references]) items with CLIP-S / RefCLIP-S.

Worker code only: torch and open_clip are imported inside the functions that need them. The
formulas themselves live in `scoring.priming.clipscore` (numpy only); checkpoints are loaded
by `scoring.priming.clip_checkpoints.load_scorer`.

Images reach the model as the 8-bit RGB picture a rater sees (``scoring.priming.images``):
on the CPU path through `scoring.pictures.image_to_rgb` and open_clip's preprocessing; with ``tensor_decode``
(the default on CUDA) the common JPEGs are decoded, resized and normalised on the model's
device instead, and every other format keeps the CPU path.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from scoring.pictures import StoredImage, open_image
from scoring.priming.clipscore import CLIP_S_W, clip_s, prompt_for, ref_clip_s
from scoring.priming.images import TensorPreprocess, decode_jpegs, device_decodable, load_rgb

if TYPE_CHECKING:
    import torch
    from PIL import Image

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


def _read_bytes(loader: Callable[[], Image.Image]) -> bytes | None:
    """The file bytes of a `StoredImage` loader; None for other loaders and unreadable files
    (the CPU path then calls the loader, and reports the error)."""
    if not isinstance(loader, StoredImage):
        return None
    try:
        return loader.read()
    except Exception:  # noqa: BLE001 - reported by the CPU path, which reads again
        return None


def _bytes_loader(data: bytes) -> Callable[[], Image.Image]:
    return lambda: open_image(data)


class ClipScorer:
    """One open_clip model scoring (image, caption[, references]) items with CLIP-S / RefCLIP-S.

    Image embeddings are cached by image key (an LRU of `cache_size` entries), so an image
    captioned several times is decoded and encoded once. The counters (`images_decoded`,
    `image_encoder_calls`, `images_encoded`, `image_cache_hits`, `text_encoder_calls`,
    `texts_encoded`) make that visible. Not thread-safe: one scorer per worker process.

    `tensor_decode`: decode and preprocess the JPEGs of `StoredImage` loaders on the model's
    device (``scoring.priming.images``), the next batch while the current one is encoded;
    only for open_clip preprocessing that `TensorPreprocess` mirrors (otherwise ignored).
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
        tensor_decode: bool = False,
    ) -> None:
        import torch
        from open_clip.transform import PreprocessCfg, image_transform_v2

        self.model = model.to(device).eval()
        self.tokenizer = tokenizer
        cfg = dict(model.visual.preprocess_cfg)
        if preprocess is None:
            preprocess = image_transform_v2(PreprocessCfg(**cfg), is_train=False)
        else:
            tensor_decode = False  # a preprocessing of the caller's own: only the CPU path applies it
        self.preprocess = preprocess
        self.identity = dict(identity)
        self.w = float(w)
        self.device = torch.device(device)
        self.precision = precision
        self.input_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(precision, torch.float32)
        self.cache_size = cache_size
        self.batch_size = batch_size
        self.decode_workers = decode_workers
        self.tensor_preprocess = (
            TensorPreprocess(cfg, self.input_dtype) if tensor_decode and TensorPreprocess.supports(cfg) else None
        )
        self._side_stream = torch.cuda.Stream(self.device) if self.tensor_preprocess and self._cuda else None
        self._trim_text = _can_trim_text(model)
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._texts_recent: dict[str, np.ndarray] = {}  # the last scored batch's text embeddings
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

    @property
    def _cuda(self) -> bool:
        return self.device.type == "cuda"

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
        image, error = load_rgb(loader)
        return (None, error) if image is None else (self.preprocess(image), None)

    def _prepared_chunks(
        self, pending: list[tuple[str, Callable[[], Image.Image]]], size: int
    ) -> Iterator[list[tuple[str, torch.Tensor | None, str | None]]]:
        """Decoded and preprocessed images, one encoder batch at a time.

        With decode workers, the next batch is decoded in threads (PIL and torch release the
        GIL) while the current one is encoded: on a GPU the forward pass is fast and decoding
        is the bottleneck. At most two batches are held at once.
        """
        chunks = [pending[i : i + size] for i in range(0, len(pending), size)]
        if self.tensor_preprocess is not None:
            yield from self._tensor_chunks(chunks)
            return
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

    def _tensor_chunks(
        self, chunks: list[list[tuple[str, Callable[[], Image.Image]]]]
    ) -> Iterator[list[tuple[str, torch.Tensor | None, str | None]]]:
        """Like `_prepared_chunks`, through the device path: the next chunk is read, decoded and
        preprocessed in a thread (on a CUDA side stream) while the current one is encoded."""
        import torch

        with ThreadPoolExecutor(max_workers=1) as ahead, ThreadPoolExecutor(max(1, self.decode_workers)) as readers:
            upcoming = ahead.submit(self._tensor_chunk, chunks[0], readers) if chunks else None
            for n in range(len(chunks)):
                prepared, ready = upcoming.result()
                if n + 1 < len(chunks):
                    upcoming = ahead.submit(self._tensor_chunk, chunks[n + 1], readers)
                if ready is not None:
                    stream = torch.cuda.current_stream(self.device)
                    stream.wait_event(ready)
                    for _, tensor, _ in prepared:
                        if tensor is not None:
                            tensor.record_stream(stream)  # made on the side stream, used on this one
                yield prepared

    def _tensor_chunk(
        self, chunk: list[tuple[str, Callable[[], Image.Image]]], readers: ThreadPoolExecutor
    ) -> tuple[list[tuple[str, torch.Tensor | None, str | None]], torch.cuda.Event | None]:
        """One chunk on the device path: file bytes read in threads; the device-decodable JPEGs
        decoded in one call and preprocessed on the device; the rest through `_prepare` (the CPU
        path), copied from pinned memory. Returns the chunk and, on CUDA, the event that marks it
        ready on the side stream."""
        import torch

        datas = list(readers.map(_read_bytes, [loader for _, loader in chunk]))
        on_device = [i for i, data in enumerate(datas) if data is not None and device_decodable(data)]
        with torch.cuda.stream(self._side_stream) if self._side_stream else contextlib.nullcontext():
            decoded = decode_jpegs([datas[i] for i in on_device], self.device)
            kept = [(i, image) for i, image in zip(on_device, decoded, strict=True) if image is not None]
            tensors = dict(zip((i for i, _ in kept), self.tensor_preprocess([image for _, image in kept]), strict=True))
            rest = [i for i in range(len(chunk)) if i not in tensors]
            sources = [chunk[i][1] if datas[i] is None else _bytes_loader(datas[i]) for i in rest]
            errors: dict[int, str] = {}
            for i, (tensor, error) in zip(rest, readers.map(self._prepare, sources), strict=True):
                if error is None:
                    tensor = tensor.pin_memory() if self._cuda else tensor
                    tensors[i] = tensor.to(self.device, self.input_dtype, non_blocking=True)
                else:
                    errors[i] = error
            ready = None
            if self._side_stream is not None:
                ready = torch.cuda.Event()
                ready.record(self._side_stream)
        prepared = [(key, tensors.get(i), errors.get(i)) for i, (key, _) in enumerate(chunk)]
        return prepared, ready

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

    def text_features(self, texts: Sequence[str], batch_size: int | None = None) -> np.ndarray:
        """Embeddings of ``texts``, in order; those of the batch ``score_pairs`` scored last are
        reused (the learned predictor reads the captions CLIP-S has just encoded)."""
        known = dict(self._texts_recent)
        missing = list(dict.fromkeys(text for text in texts if text not in known))
        if missing:
            known.update(zip(missing, self.encode_texts(missing, batch_size or self.batch_size), strict=True))
        return np.stack([known[text] for text in texts])

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
        self._texts_recent = dict(zip(texts, text_features, strict=True))

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
