"""Real data beside the project (``../shared/external``, see SPEC section 7), for tests that use it."""

import os
from pathlib import Path

SHARED = Path(os.environ.get("RATINGGAME_SHARED_DIR") or Path(__file__).resolve().parents[2] / "shared")
VICR_SAMPLE = SHARED / "external" / "vicr_sample250" / "VICR_Sample250.csv"
