"""Demo content: captions at every level of the VICR scale for photographs shipped in scikit-image.

The data is ``content.json`` beside this module (``images``: key -> file name in skimage/data;
``tutorial``, ``probation``, ``game``, ``control``, ``guide`` and ``attention``: the pairs), read once by
``ratinggame.demo.loader``.
The images are files of the scikit-image package (``skimage/data``), so nothing is downloaded.
Captions are written the way captioning models and people write them; ``source`` says which
kind each imitates
("mismatched" = a caption written for another image, which always rates 1).

Expert ratings follow the 5-level scale of the VICR paper (Table 2, SPEC.md section 1):
5 adds an interpretation of the setting or event to a complete, spatially placed
description; 4 places things in space but interprets nothing; 3 names the relevant objects
but not where they are nor the setting; 2 has errors but still gives an idea of the
picture; 1 gets the objects or the idea wrong. Every explanation quotes the level it applies.

The control pairs (quality checks hidden in the game, SPEC 2.5) are the VICR validation
study's shape: five images, one caption written for each level. The attention checks (SPEC 7,
served only when a study turns them on) are instructed-response items, one per level.

The tutorial is ordered to teach (a clear 5 and a clear 1 first, then the finer
distinctions); probation is balanced, twelve pairs per level: 60 pairs, three rounds' worth
(``annotators.journey.PROBATION_SIZE`` each), so three rounds never show a rater a pair twice
(SPEC 2.2). The Rating Guide has an example per level of its own, on images the tutorial does
not show (so it gives no tutorial answer away), each with a one-line why that quotes the rubric.
Each game caption carries the
``level`` it was written for: the demo has no model weights to prime its game pairs with
(SPEC section 4), so ``ratinggame.demo.loader`` primes them from these levels, under a model
identity that says so, and its demo crowd rates around them. Game pairs carry the reference
captions of their image (RefCLIP-S), except captions written for another image.
"""

import json
from pathlib import Path

_DATA = json.loads((Path(__file__).with_name("content.json")).read_text(encoding="utf-8"))

DEMO_IMAGES: dict[str, str] = _DATA["images"]
TUTORIAL: list[dict] = _DATA["tutorial"]
PROBATION: list[dict] = _DATA["probation"]
GAME: list[dict] = _DATA["game"]
CONTROL: list[dict] = _DATA["control"]
GUIDE: list[dict] = _DATA["guide"]
ATTENTION: list[dict] = _DATA["attention"]
