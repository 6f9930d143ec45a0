"""Loading open_clip checkpoints for the CLIP-family priming scorers (SPEC section 4).

Worker code only. torch and open_clip are imported inside the functions that need them, so
importing this module stays cheap, but nothing the web process imports may import it.

`load_scorer` builds a `ClipScorer` (``scoring.priming.clip_scorer``) from one of:

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
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import zipfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scoring.priming.clip_scorer import DEFAULT_BATCH_SIZE, DEFAULT_CACHE_SIZE, ClipScorer
from scoring.priming.clipscore import CLIP_S_W, PAC_S_W
from scoring.priming.scorer import ScorerLoadError, short_error

if TYPE_CHECKING:
    import torch

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
PRECISIONS = ("fp32", "fp16", "bf16", "amp")


def file_sha256(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


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
        raise ScorerLoadError(f"{path}: not a readable checkpoint ({short_error(exc)})") from exc
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
        raise ScorerLoadError(f"could not build the open_clip architecture {model_name!r}: {short_error(exc)}") from exc


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
        raise ScorerLoadError(f"could not load {model_name} from the Hugging Face hub: {short_error(exc)}") from exc
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
            f"and pass its path): {short_error(exc)}"
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


def _load_weights(
    model_name: str, pretrained: str | None, *, precision: str, quick_gelu: bool | None, pacs: bool, base: str | None
) -> _Loaded:
    """The model and its weights from whichever source ``model_name`` and ``pretrained`` name."""
    import open_clip

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
        return _from_directory(Path(local_dir).expanduser().resolve(), precision=precision, quick_gelu=quick_gelu)
    elif model_name.startswith("hf-hub:"):
        return _from_hub(model_name, precision=precision, quick_gelu=quick_gelu)
    elif not builtin:
        raise ScorerLoadError(f"unknown open_clip model {model_name!r} (see open_clip.list_models())")
    elif pretrained is None:
        raise ScorerLoadError(
            f"no weights given for {model_name}: pass a pretrained tag or a checkpoint file "
            "(random weights would give meaningless primes)"
        )
    elif is_tag:
        return _from_tag(model_name, pretrained, tag_cfg, precision=precision, quick_gelu=quick_gelu)
    elif pacs or Path(pretrained).suffix in CHECKPOINT_SUFFIXES or "/" in pretrained or Path(pretrained).exists():
        path = Path(pretrained).expanduser().resolve()
        return _from_file(model_name, path, precision=precision, quick_gelu=quick_gelu, pacs=pacs, base=base)
    tags = open_clip.list_pretrained_tags_by_model(model_name)
    raise ScorerLoadError(
        f"{pretrained!r} is neither a checkpoint file nor a pretrained tag of {model_name} (tags: {tags})"
    )


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
    tensor_decode: bool | None = None,
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
    tensor_decode: decode JPEGs with nvJPEG and preprocess them on the device (default: on
    CUDA; ``scoring.priming.images``); the CPU path is kept for the other formats.
    Raises ScorerLoadError, with the file and the reason, for anything that cannot be loaded.
    """
    try:
        import open_clip
    except ImportError as exc:
        raise ScorerLoadError(f"open_clip/torch are not installed in this worker: {exc}") from exc
    if base is not None and not pacs:
        raise ScorerLoadError("`base` names the weights a PAC-S checkpoint was fine-tuned from: pass pacs=True")

    device = _default_device(device)
    precision = _checked_precision(precision, device)
    loaded = _load_weights(model_name, pretrained, precision=precision, quick_gelu=quick_gelu, pacs=pacs, base=base)

    if w is None:
        w = PAC_S_W if pacs else CLIP_S_W
    if decode_workers is None:
        decode_workers = min(8, os.cpu_count() or 1) if device.startswith("cuda") else 0
    if tensor_decode is None:
        tensor_decode = device.startswith("cuda")
    return ClipScorer(
        loaded.model,
        tokenizer=loaded.tokenizer,
        identity=_scorer_identity(loaded, pacs=pacs, w=w, precision=precision, open_clip_version=open_clip.__version__),
        w=w,
        device=device,
        precision=precision,
        cache_size=cache_size,
        batch_size=batch_size,
        decode_workers=decode_workers,
        tensor_decode=tensor_decode,
    )


def _checked_precision(precision: str | None, device: str) -> str:
    """The precision asked for, or the device's default (fp16 on CUDA, as the reference
    CLIPScore code runs; fp32 elsewhere), refused unless it is one of PRECISIONS."""
    precision = precision or ("fp16" if device.startswith("cuda") else "fp32")
    if precision not in PRECISIONS:
        raise ScorerLoadError(f"precision must be one of {PRECISIONS}, not {precision!r}")
    return precision


def _scorer_identity(loaded: _Loaded, *, pacs: bool, w: float, precision: str, open_clip_version: str) -> dict:
    """The scorer's identity: where its weights came from plus every setting that changes its
    scores, so stored primes can be traced to exactly what produced them."""
    return {
        **loaded.identity,
        "pac_s": pacs,
        "quick_gelu": _uses_quick_gelu(loaded.model),
        "w": float(w),
        "precision": precision,
        "open_clip": open_clip_version,
    }


def _uses_quick_gelu(model: torch.nn.Module) -> bool:
    from open_clip.transformer import QuickGELU

    return any(isinstance(m, QuickGELU) for m in model.modules())
