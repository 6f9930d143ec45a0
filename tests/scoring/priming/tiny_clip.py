"""A tiny randomly initialised open_clip model saved in open_clip's folder layout.

Same architecture and layout as tests/scoring/priming/test_clip_checkpoints.py (2-layer towers, 64 wide,
32 px images, the standard tokenizer): a folder with open_clip_config.json and
open_clip_model.safetensors, which `load_scorer(folder)` reads, so a worker subprocess can
load it from RATINGGAME_PRIMING_MODEL without registering a model config.
"""

import hashlib
import json
from pathlib import Path

import numpy as np

TINY_CFG = {
    "embed_dim": 32,
    "vision_cfg": {"image_size": 32, "layers": 2, "width": 64, "patch_size": 16, "head_width": 32},
    "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 64, "heads": 2, "layers": 2},
}


def save_tiny_clip_dir(directory: Path, seed: int = 0) -> Path:
    import open_clip
    import torch
    from safetensors.torch import save_file

    directory.mkdir(parents=True, exist_ok=True)
    config = {"model_cfg": TINY_CFG}
    (directory / "open_clip_config.json").write_text(json.dumps(config))
    torch.manual_seed(seed)
    model = open_clip.create_model(f"local-dir:{directory}", load_weights=False).eval()
    config["preprocess_cfg"] = model.visual.preprocess_cfg
    (directory / "open_clip_config.json").write_text(json.dumps(config))
    save_file(
        {k: v.contiguous() for k, v in model.state_dict().items()}, str(directory / "open_clip_model.safetensors")
    )
    return directory


def embedded(scorer, images) -> np.ndarray:
    """``scorer``'s embeddings of PIL images through the path priming takes (``image_features``),
    each image keyed by its pixels: an image the scorer has not seen is decoded and encoded."""
    items = [
        (hashlib.sha256(image.mode.encode() + str(image.size).encode() + image.tobytes()).hexdigest(), image)
        for image in images
    ]
    features, errors = scorer.image_features([(key, lambda image=image: image, "", None) for key, image in items])
    assert errors == {}
    return np.stack([features[key] for key, _ in items])
