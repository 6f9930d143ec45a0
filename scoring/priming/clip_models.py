"""open_clip checkpoints as CLIP-S / RefCLIP-S scorers for model priming (SPEC section 4).

Worker code only. torch and open_clip are imported inside the functions that need them, so
importing this module stays cheap, but nothing the web process imports may import it.
The formulas themselves live in `scoring.priming.clipscore` (numpy only).

`load_scorer` builds a `ClipScorer` from one of:

- a built-in open_clip architecture and a pretrained tag: `load_scorer("ViT-B-32", "openai")`
  (open_clip downloads the weights where a hub is reachable);
- a Hugging Face hub model: `load_scorer("hf-hub:org/repo")`;
- an architecture and a local checkpoint file (.pt/.pth/.bin/.safetensors, a state dict,
  possibly nested under "state_dict"/"model" with "module." prefixes, or an OpenAI
  TorchScript archive): `load_scorer("ViT-B-32", "/models/ViT-B-32.pt")`;
- a local directory in open_clip's hub layout (open_clip_config.json + weights):
  `load_scorer("/models/my-clip")` (or "local-dir:/models/my-clip");
- a PAC-S checkpoint over its base architecture: `load_scorer("ViT-B-32",
  "/models/clip_ViT-B-32.pth", pacs=True)`, scored with w = 2.0; `base="laion2b_s32b_b82k"`
  names the weights PAC-S was fine-tuned from when they are not OpenAI's (see
  `pacs_quick_gelu`).

Images go through `image_to_rgb` before open_clip's preprocessing, so 16-bit, float,
CMYK, palette and transparent images reach the model as the 8-bit RGB picture a rater sees.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import zipfile
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from scoring.priming.clipscore import CLIP_S_W, PAC_S_W, clip_s, prompt_for, ref_clip_s

if TYPE_CHECKING:
    import torch
    from PIL import Image

log = logging.getLogger(__name__)

CHECKPOINT_SUFFIXES = (".pt", ".pth", ".bin", ".safetensors")
# Weight files looked for in a checkpoint directory, in open_clip's order of preference
# (open_clip.factory._find_checkpoint_in_dir).
DIRECTORY_WEIGHT_FILES = (
    "open_clip_model.safetensors",
    "open_clip_pytorch_model.safetensors",
    "open_clip_pytorch_model.bin",
    "open_clip_pytorch_model.pth",
    "model.safetensors",
    "pytorch_model.bin",
)
# Entries that only OpenAI's released CLIP models carry next to the weights (they are
# attributes of the TorchScript archive and show up in its state_dict()).
OPENAI_METADATA_KEYS = ("input_resolution", "context_length", "vocab_size")
# Image modes holding more than 8 bits per sample (see image_to_rgb).
HIGH_DEPTH_MODES = ("I;16", "I;16L", "I;16B", "I;16N", "I", "F")
# Modes with an alpha channel (or palette transparency, checked separately).
ALPHA_MODES = ("RGBA", "RGBa", "LA", "La", "PA")
EXIF_ORIENTATION = 0x0112
PRECISIONS = ("fp32", "fp16", "bf16", "amp")
DEFAULT_CACHE_SIZE = 4096  # image embeddings kept across calls: ~8 MB for 512-d float32
DEFAULT_BATCH_SIZE = 64


class ScorerLoadError(Exception):
    """The scorer could not be built; the message names the source and what was wrong."""


@dataclass(frozen=True)
class PairScore:
    """Raw scores of one (image, caption) item: CLIP-S, RefCLIP-S when it had references, or an error."""

    clip_s: float | None
    ref_clip_s: float | None = None
    error: str | None = None


# (image_key, image_loader, caption, references): image_key identifies the image (its sha256),
# image_loader returns a PIL image and is called at most once per distinct key.
ScoreItem = tuple[str, Callable[[], "Image.Image"], str, Sequence[str] | None]


def _short(exc: BaseException, limit: int = 300) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def file_sha256(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


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


# ---------------------------------------------------------------------------------------
# Reading checkpoints


def _is_torchscript_archive(path: Path) -> bool:
    # torch.save and torch.jit.save both write zip files; only TorchScript stores code.
    if not zipfile.is_zipfile(path):
        return False
    with zipfile.ZipFile(path) as archive:
        return any(name.endswith("/constants.pkl") or "/code/" in name for name in archive.namelist())


def _unwrap_state_dict(obj: Any, path: Path) -> dict[str, torch.Tensor]:
    import torch

    # Training scripts save {"state_dict": ..., "epoch": ...} (open_clip, PAC-S) or {"model": ...}.
    for _ in range(3):
        if isinstance(obj, Mapping) and not all(isinstance(v, torch.Tensor) for v in obj.values()):
            inner = next((obj[k] for k in ("state_dict", "model") if isinstance(obj.get(k), Mapping)), None)
            if inner is None:
                break
            obj = inner
    if not isinstance(obj, Mapping) or not obj:
        raise ScorerLoadError(f"{path}: not a checkpoint: expected a state dict, found {type(obj).__name__}")
    odd = [k for k, v in obj.items() if not isinstance(v, torch.Tensor)]
    if odd:
        raise ScorerLoadError(f"{path}: not a state dict: {len(odd)} entries are not tensors (e.g. {odd[:3]})")
    state_dict = {str(k): v for k, v in obj.items()}
    if all(k.startswith("module.") for k in state_dict):  # saved from DataParallel / DDP
        state_dict = {k.removeprefix("module."): v for k, v in state_dict.items()}
    return state_dict


def read_checkpoint(path: Path) -> tuple[dict[str, torch.Tensor], bool]:
    """The state dict in a checkpoint file, and whether the file is an OpenAI release.

    OpenAI's own weights come as TorchScript archives whose state carries
    `input_resolution`, `context_length` and `vocab_size`; those are the tell-tale signs.
    A plain state dict of OpenAI weights cannot be told apart from one of open_clip-trained
    weights (open_clip's CLIP uses OpenAI's parameter names), so it is not flagged.
    """
    import torch

    if not path.is_file():
        raise ScorerLoadError(f"checkpoint file not found: {path}")
    openai = False
    try:
        if path.suffix == ".safetensors":
            from safetensors.torch import load_file

            obj: Any = load_file(str(path), device="cpu")
        elif _is_torchscript_archive(path):
            obj = torch.jit.load(str(path), map_location="cpu").state_dict()
            openai = True
        else:
            # weights_only: a checkpoint is tensors and plain containers; refuse to run pickled code.
            obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:
        raise ScorerLoadError(f"{path}: not a readable checkpoint ({_short(exc)})") from exc
    state_dict = _unwrap_state_dict(obj, path)
    if any(k in state_dict for k in OPENAI_METADATA_KEYS):
        openai = True
    for key in OPENAI_METADATA_KEYS:
        state_dict.pop(key, None)
    return state_dict, openai


def load_state_dict_strict(model: torch.nn.Module, state_dict: dict[str, torch.Tensor], path: Path, model_name: str):
    """Load every weight of the model from the state dict, or raise naming what does not match."""
    from open_clip.model import convert_to_custom_text_state_dict

    state_dict = dict(state_dict)
    # The same format fixes open_clip.load_checkpoint applies (older text-tower layout, scalar
    # vs 1-d logit_scale); no positional-embedding resizing, which would hide a wrong architecture.
    if "positional_embedding" in state_dict and not hasattr(model, "positional_embedding"):
        state_dict = convert_to_custom_text_state_dict(state_dict)
    scale = state_dict.get("logit_scale")
    if scale is not None and hasattr(model, "logit_scale") and scale.ndim != model.logit_scale.ndim:
        state_dict["logit_scale"] = scale.reshape(model.logit_scale.shape)
    state_dict.pop("text.transformer.embeddings.position_ids", None)
    expected = model.state_dict()
    # Buffers the model computes itself (the causal attn_mask) but a TorchScript archive stores.
    for name, _ in model.named_buffers():
        if name not in expected:
            state_dict.pop(name, None)

    missing = sorted(set(expected) - set(state_dict))
    unexpected = sorted(set(state_dict) - set(expected))
    mismatched = [
        f"{k}: checkpoint {tuple(state_dict[k].shape)} vs model {tuple(expected[k].shape)}"
        for k in expected
        if k in state_dict and state_dict[k].shape != expected[k].shape
    ]
    if missing or unexpected or mismatched:
        parts = [f"{len(missing)} missing (e.g. {', '.join(missing[:3]) or '-'})"]
        parts.append(f"{len(unexpected)} unexpected (e.g. {', '.join(unexpected[:3]) or '-'})")
        parts.append(f"{len(mismatched)} shape mismatch(es) (e.g. {'; '.join(mismatched[:2]) or '-'})")
        hint = "Is it a checkpoint of another architecture?"
        if any("lora_" in k for k in unexpected):
            hint = "It holds LoRA adapters (PAC-S++?): merge them into the base weights first."
        raise ScorerLoadError(f"{path}: keys don't match model {model_name}: {', '.join(parts)}. {hint}")
    model.load_state_dict(state_dict, strict=True)


# ---------------------------------------------------------------------------------------
# Building scorers


@contextlib.contextmanager
def _without_random_init_warning() -> Iterator[None]:
    # open_clip logs "Model initialized randomly" on the root logger when it builds the bare
    # architecture we then fill from the checkpoint: misleading in worker logs.
    def keep(record: logging.LogRecord) -> bool:
        return "initialized randomly" not in record.getMessage()

    root = logging.getLogger()
    root.addFilter(keep)
    try:
        yield
    finally:
        root.removeFilter(keep)


def _weights_precision(precision: str) -> str:
    # "amp" keeps fp32 weights; autocast does the rest at inference (ClipScorer._inference).
    return "fp32" if precision == "amp" else precision


def _create_architecture(model_name: str, *, precision: str, quick_gelu: bool) -> torch.nn.Module:
    import open_clip

    try:
        with _without_random_init_warning():
            return open_clip.create_model(
                model_name,
                pretrained=None,
                load_weights=False,
                precision=_weights_precision(precision),
                device="cpu",
                force_quick_gelu=quick_gelu,
                pretrained_image=False,
                pretrained_text=False,
            )
    except Exception as exc:
        raise ScorerLoadError(f"could not build the open_clip architecture {model_name!r}: {_short(exc)}") from exc


def _default_device(device: str | None) -> str:
    import torch

    return device or ("cuda" if torch.cuda.is_available() else "cpu")


def _find_directory_weights(directory: Path) -> Path:
    for name in DIRECTORY_WEIGHT_FILES:
        if (directory / name).is_file():
            return directory / name
    found = sorted(p for p in directory.iterdir() if p.suffix in CHECKPOINT_SUFFIXES and p.is_file())
    if len(found) == 1:
        return found[0]
    if not found:
        raise ScorerLoadError(f"{directory}: no weights file (expected open_clip_model.safetensors or similar)")
    raise ScorerLoadError(f"{directory}: several weights files, cannot tell which to use: {[p.name for p in found]}")


@dataclass
class _Loaded:
    model: torch.nn.Module
    tokenizer: Callable[[list[str]], torch.Tensor]
    identity: dict[str, Any]


def _from_directory(directory: Path, *, precision: str, quick_gelu: bool | None) -> _Loaded:
    import open_clip

    if not directory.is_dir():
        raise ScorerLoadError(f"checkpoint directory not found: {directory}")
    if not (directory / "open_clip_config.json").is_file():
        raise ScorerLoadError(
            f"{directory}: no open_clip_config.json (expected open_clip's layout: "
            "open_clip_config.json + open_clip_model.safetensors)"
        )
    weights = _find_directory_weights(directory)
    state_dict, openai = read_checkpoint(weights)
    quick_gelu = openai if quick_gelu is None else quick_gelu
    model = _create_architecture(f"local-dir:{directory}", precision=precision, quick_gelu=quick_gelu)
    load_state_dict_strict(model, state_dict, weights, str(directory))
    identity = {"model": str(directory), "pretrained": str(weights), "sha256": file_sha256(weights)}
    return _Loaded(model, open_clip.get_tokenizer(f"local-dir:{directory}"), identity)


def _from_hub(model_name: str, *, precision: str, quick_gelu: bool | None) -> _Loaded:
    import open_clip

    try:
        model = open_clip.create_model(
            model_name, precision=_weights_precision(precision), force_quick_gelu=bool(quick_gelu)
        )
        tokenizer = open_clip.get_tokenizer(model_name)
    except Exception as exc:
        raise ScorerLoadError(f"could not load {model_name} from the Hugging Face hub: {_short(exc)}") from exc
    return _Loaded(model, tokenizer, {"model": model_name, "pretrained": None, "sha256": None})


def _from_tag(model_name: str, tag: str, tag_cfg: dict, *, precision: str, quick_gelu: bool | None) -> _Loaded:
    import open_clip

    quick_gelu = bool(tag_cfg.get("quick_gelu", False)) if quick_gelu is None else quick_gelu
    try:
        model = open_clip.create_model(
            model_name, pretrained=tag, precision=_weights_precision(precision), force_quick_gelu=quick_gelu
        )
    except Exception as exc:
        raise ScorerLoadError(
            f"could not load {model_name} weights {tag!r} (no network? download the file elsewhere "
            f"and pass its path): {_short(exc)}"
        ) from exc
    identity = {"model": model_name, "pretrained": tag, "sha256": None}
    return _Loaded(model, open_clip.get_tokenizer(model_name), identity)


def pacs_quick_gelu(model_name: str, base: str | None = None) -> bool:
    """Whether a PAC-S checkpoint over ``model_name``, fine-tuned from ``base``, needs QuickGELU.

    PAC-S fine-tunes a released CLIP and keeps its activation, and a state dict does not
    say which activation it was trained with, so the base decides:

    - ``base`` a pretrained tag: open_clip's flag for it ("openai": QuickGELU;
      "laion2b_s32b_b82k", the base of PAC-S's open_clip ViT-L/14 release: GELU);
    - ``base`` a file: QuickGELU for an OpenAI TorchScript archive (OpenAI's release format);
    - no base: QuickGELU when open_clip knows OpenAI weights for the architecture (ViT-B-32,
      ViT-B-16, ViT-L-14, ViT-L-14-336, the ResNets): PAC-S ViT-B/32 and PAC-S++ ViT-B/32
      and ViT-L/14 start from OpenAI's models (aimagelab/pacscore: clip.load(...)).
    """
    import open_clip

    if base:
        cfg = open_clip.get_pretrained_cfg(model_name, base)
        if cfg:
            return bool(cfg.get("quick_gelu", False))
        path = Path(base).expanduser()
        if path.is_file():
            return _is_torchscript_archive(path)
        tags = open_clip.list_pretrained_tags_by_model(model_name)
        raise ScorerLoadError(
            f"PAC-S base {base!r} is neither a pretrained tag of {model_name} (tags: {tags}) nor a file"
        )
    return "openai" in open_clip.list_pretrained_tags_by_model(model_name)


def _from_file(
    model_name: str, path: Path, *, precision: str, quick_gelu: bool | None, pacs: bool, base: str | None = None
) -> _Loaded:
    import open_clip

    if path.is_dir():
        raise ScorerLoadError(f"{path} is a directory: pass it as model_name, with pretrained=None")
    state_dict, openai = read_checkpoint(path)
    if quick_gelu is None:
        quick_gelu = openai or (pacs and pacs_quick_gelu(model_name, base))
    model = _create_architecture(model_name, precision=precision, quick_gelu=quick_gelu)
    load_state_dict_strict(model, state_dict, path, model_name)
    identity = {"model": model_name, "pretrained": str(path), "sha256": file_sha256(path)}
    if pacs:
        identity["pacs_base"] = base
    return _Loaded(model, open_clip.get_tokenizer(model_name), identity)


def load_scorer(
    model_name: str,
    pretrained: str | None = None,
    device: str | None = None,
    precision: str | None = None,
    w: float | None = None,
    *,
    quick_gelu: bool | None = None,
    pacs: bool = False,
    base: str | None = None,
    cache_size: int = DEFAULT_CACHE_SIZE,
    batch_size: int = DEFAULT_BATCH_SIZE,
    decode_workers: int | None = None,
) -> ClipScorer:
    """Build a scorer from open_clip weights (see the module docstring for the sources).

    QuickGELU: OpenAI's CLIP models were trained with QuickGELU, open_clip's plain
    architectures ("ViT-B-32") use GELU, and the wrong activation silently degrades the
    scores. `quick_gelu=None` decides it: True for a pretrained tag that open_clip marks
    quick_gelu (e.g. "openai"), for an OpenAI TorchScript archive or a state dict carrying
    OpenAI's `input_resolution`/`context_length`/`vocab_size` entries, and for a PAC-S
    checkpoint whose base is OpenAI's model (`pacs_quick_gelu`: by default any architecture
    OpenAI released, ViT-B-32 and ViT-L-14 included; `base` names another). A plain state
    dict of OpenAI weights looks exactly like an open_clip one: pass `quick_gelu=True` or
    the model name "ViT-B-32-quickgelu" for it. True/False forces the choice.

    PAC-S: `pretrained` is the PAC-S checkpoint file, a complete state dict loaded strictly
    over the architecture (as aimagelab/pacscore's `model.load_state_dict(checkpoint[
    "state_dict"])` replaces every base weight), so the base weights themselves are never
    downloaded; `base` (a pretrained tag or file) only tells which activation they used.

    A checkpoint file gets open_clip's default preprocessing (OpenAI mean/std, bicubic
    resize of the short side, centre crop); a directory's open_clip_config.json may set
    another (its "preprocess_cfg").

    Device: CUDA when available, with `precision="fp16"` (open_clip's OpenAI-style half
    precision weights, as the reference CLIPScore code runs on GPU); otherwise CPU and "fp32".
    "amp" keeps fp32 weights and runs under torch.autocast; "bf16" is also accepted.

    w: 2.5 (CLIPScore, ViT-B/32) unless given; 2.0 for PAC-S (SPEC section 4).
    decode_workers: threads decoding images while the model encodes; default 0 on CPU (the
    encoder already uses every core) and up to 8 on CUDA (where decoding is the bottleneck).
    Raises ScorerLoadError, with the file and the reason, for anything that cannot be loaded.
    """
    try:
        import open_clip
    except ImportError as exc:
        raise ScorerLoadError(f"open_clip/torch are not installed in this worker: {exc}") from exc
    if base is not None and not pacs:
        raise ScorerLoadError("`base` names the weights a PAC-S checkpoint was fine-tuned from: pass pacs=True")

    device = _default_device(device)
    precision = precision or ("fp16" if device.startswith("cuda") else "fp32")
    if precision not in PRECISIONS:
        raise ScorerLoadError(f"precision must be one of {PRECISIONS}, not {precision!r}")
    local_dir = model_name.removeprefix("local-dir:")
    tag_cfg = open_clip.get_pretrained_cfg(model_name, pretrained) if pretrained else {}
    # A file that happens to be named like a tag wins; PAC-S weights always come as a file.
    is_tag = bool(tag_cfg) and not pacs and not Path(pretrained).exists()
    if pacs and (pretrained is None or model_name.startswith("hf-hub:")):
        raise ScorerLoadError("pacs=True needs the PAC-S checkpoint file as `pretrained` over its base architecture")

    builtin = model_name in open_clip.list_models()
    if model_name.startswith("local-dir:") or (not builtin and Path(local_dir).is_dir()):
        if pretrained is not None:
            raise ScorerLoadError(f"{local_dir}: a checkpoint directory brings its own weights; pass pretrained=None")
        loaded = _from_directory(Path(local_dir).expanduser().resolve(), precision=precision, quick_gelu=quick_gelu)
    elif model_name.startswith("hf-hub:"):
        loaded = _from_hub(model_name, precision=precision, quick_gelu=quick_gelu)
    elif not builtin:
        raise ScorerLoadError(f"unknown open_clip model {model_name!r} (see open_clip.list_models())")
    elif pretrained is None:
        raise ScorerLoadError(
            f"no weights given for {model_name}: pass a pretrained tag or a checkpoint file "
            "(random weights would give meaningless primes)"
        )
    elif is_tag:
        loaded = _from_tag(model_name, pretrained, tag_cfg, precision=precision, quick_gelu=quick_gelu)
    elif pacs or Path(pretrained).suffix in CHECKPOINT_SUFFIXES or "/" in pretrained or Path(pretrained).exists():
        path = Path(pretrained).expanduser().resolve()
        loaded = _from_file(model_name, path, precision=precision, quick_gelu=quick_gelu, pacs=pacs, base=base)
    else:
        tags = open_clip.list_pretrained_tags_by_model(model_name)
        raise ScorerLoadError(
            f"{pretrained!r} is neither a checkpoint file nor a pretrained tag of {model_name} (tags: {tags})"
        )

    if w is None:
        w = PAC_S_W if pacs else CLIP_S_W
    if decode_workers is None:
        decode_workers = min(8, os.cpu_count() or 1) if device.startswith("cuda") else 0
    identity = {
        **loaded.identity,
        "pac_s": pacs,
        "quick_gelu": _uses_quick_gelu(loaded.model),
        "w": float(w),
        "precision": precision,
        "open_clip": open_clip.__version__,
    }
    return ClipScorer(
        loaded.model,
        tokenizer=loaded.tokenizer,
        identity=identity,
        w=w,
        device=device,
        precision=precision,
        cache_size=cache_size,
        batch_size=batch_size,
        decode_workers=decode_workers,
    )


def _uses_quick_gelu(model: torch.nn.Module) -> bool:
    from open_clip.transformer import QuickGELU

    return any(isinstance(m, QuickGELU) for m in model.modules())


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
            return None, f"image could not be decoded: {_short(exc)}"

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
