"""Train / validation / test split of the dataset by image (SPEC section 6; VICR paper section 6.1).

The paper splits each dataset 64% / 16% / 20%. The split is by image, so captions of one image
never land on both sides of an evaluation, and it is a pure function of the image's sha256 and
a seed: each image draws a number u in [0, 1) from ``sha256(f"{seed}:{image_sha256}")`` and
falls in train (u < 0.64), validation (u < 0.80) or test. The names are the ones Hugging Face
datasets use, so the export's dataset card can name its splits after them. Adding pairs or images later never moves an
image that was already exported, which a shuffled list (whose positions shift when items are
added) could not promise.

No Django import: the export and the rating predictor's training both use it.
"""

import hashlib

TRAIN, VAL, TEST = "train", "validation", "test"
SPLITS = (TRAIN, VAL, TEST)
SHARES = {TRAIN: 0.64, VAL: 0.16, TEST: 0.20}
_TRAIN_END = SHARES[TRAIN]
_VAL_END = SHARES[TRAIN] + SHARES[VAL]


def split_for_image(sha256: str, seed: int = 0) -> str:
    """``"train"``, ``"validation"`` or ``"test"`` for the image with content hash ``sha256`` (64/16/20).

    The first 8 bytes of ``sha256(f"{seed}:{sha256}")`` read as an unsigned integer, divided
    by 2**64, give u in [0, 1); a good hash makes u uniform, so the shares hold in expectation.
    The image hash is lower-cased first, so the same file always gets the same split.
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be a whole number, got {seed!r}")
    if not isinstance(sha256, str) or not sha256:
        raise ValueError(f"sha256 must be a non-empty string, got {sha256!r}")
    digest = hashlib.sha256(f"{seed}:{sha256.lower()}".encode()).digest()
    u = int.from_bytes(digest[:8], "big") / 2**64
    if u < _TRAIN_END:
        return TRAIN
    if u < _VAL_END:
        return VAL
    return TEST
