"""Pairs for the crowd simulator, through the researcher API only (``--setup``).

``pairs_setup`` uploads, with ``POST /api/pairs/import`` (a CSV manifest and a zip of
synthetic PNG images), the 10 tutorial, 20 probation and 25 control pairs when the server has
none of them, and ``pairs`` new game pairs. Every pair gets a true quality (balanced over 1..5,
shuffled by the seed): the expert rating of tutorial and probation pairs, the hidden quality
the simulated raters rate around for game pairs. ``expert_ratings`` reads the expert ratings
of the tutorial, probation and control pairs already on the server (``GET /api/pairs/?pool=...``).

No Django import: this is a client of the API.
"""

import asyncio
import csv
import hashlib
import io
import random
import zipfile

from PIL import Image

TUTORIAL_PAIRS = 10
PROBATION_PAIRS = 20
CONTROL_PAIRS = 25  # the VICR validation study's 25: five per level
EXPERT_POOLS = (("tutorial", TUTORIAL_PAIRS), ("probation", PROBATION_PAIRS), ("control", CONTROL_PAIRS))
SETUP_TIMEOUT = 300.0  # seconds: importing thousands of pairs is one request (or one job)
JOB_POLL_SECONDS = 1.0
PAGE_SIZE = 500  # the API's largest page


class SetupFailed(Exception):
    """The server refused to create or list pairs; the message says what it answered."""


def balanced_qualities(count: int, seed: int) -> list[int]:
    """``count`` qualities cycling through 1..5, shuffled by the seed: every level equally often."""
    values = [1 + index % 5 for index in range(count)]
    random.Random(f"qualities:{seed}:{count}").shuffle(values)
    return values


def synthetic_png(key: str, size: int = 16) -> bytes:
    """A small PNG whose colours (so whose sha256) depend on ``key``."""
    digest = hashlib.sha256(key.encode()).digest()
    image = Image.new("RGB", (size, size), tuple(digest[:3]))
    image.putpixel((0, 0), tuple(digest[3:6]))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def manifest_and_images(pool: str, qualities: list[int], tag: str) -> tuple[bytes, bytes]:
    """The CSV manifest and the zip of images for one pool's synthetic pairs, in row order."""
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow(["image", "caption", "source", "pool", "expert_rating", "explanation"])
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as images:
        for index, quality in enumerate(qualities):
            name = f"{pool}-{index}.png"
            images.writestr(name, synthetic_png(f"{tag}:{pool}:{index}"))
            expert = "" if pool == "game" else str(quality)
            explanation = "" if pool == "game" else f"Synthetic pair of quality {quality}."
            writer.writerow([name, f"synthetic {pool} caption {tag} {index}", "other", pool, expert, explanation])
    return text.getvalue().encode(), archive.getvalue()


def _refusal(response) -> str:
    try:
        error = response.json().get("error", {})
        return f"{response.status_code} {error.get('code')}: {error.get('message')} {error.get('details') or ''}"
    except ValueError:
        return f"{response.status_code} {response.text[:200]}"


async def pool_upload(session, *, pool: str, qualities: list[int], tag: str) -> dict[int, int]:
    """Create one synthetic pair per quality in ``pool``; pair id -> quality."""
    manifest, images = manifest_and_images(pool, qualities, tag)
    files = [
        ("manifest", (f"sim-{pool}.csv", manifest, "text/csv")),
        ("images", (f"sim-{pool}.zip", images, "application/zip")),
    ]
    response = await session.request(
        "setup", "POST", "/api/pairs/import", files=files, data={"pool": pool}, timeout=SETUP_TIMEOUT
    )
    if response.status_code == 202:  # a large manifest: imported by a worker, followed as a job
        report = await import_job_wait(session, response.json()["url"])
    elif response.status_code == 201:
        report = response.json()
    else:
        raise SetupFailed(f"uploading {len(qualities)} {pool} pairs was refused: {_refusal(response)}")
    pair_ids = report["pair_ids"]  # in manifest row order (ratinggame.pairs.importing)
    return dict(zip(pair_ids, qualities, strict=True))


async def import_job_wait(session, url: str) -> dict:
    """Poll an import job until it ends: its report (as the upload of a small manifest answers)."""
    deadline = asyncio.get_running_loop().time() + SETUP_TIMEOUT
    while True:
        response = await session.request("setup", "GET", url)
        job = response.json() if response.status_code == 200 else {}
        if job.get("status") == "done":
            return job["report"]
        if job.get("status") not in ("queued", "running") or asyncio.get_running_loop().time() > deadline:
            raise SetupFailed(f"the import job {url} did not finish: {job or _refusal(response)}")
        await asyncio.sleep(JOB_POLL_SECONDS)


async def pool_pairs(session, pool: str) -> list[dict]:
    """Every pair of ``pool``, as the researcher API lists them."""
    pairs: list[dict] = []
    page = 1
    while True:
        response = await session.request(
            "setup", "GET", "/api/pairs/", params={"pool": pool, "page_size": PAGE_SIZE, "page": page}
        )
        if response.status_code != 200:
            raise SetupFailed(f"listing the {pool} pairs was refused: {_refusal(response)}")
        body = response.json()
        pairs.extend(body["results"])
        if not body.get("next"):
            return pairs
        page += 1


async def pairs_setup(session, *, pairs: int, seed: int, tag: str) -> dict[int, int]:
    """Tutorial, probation and control pools (only where the server has none) and ``pairs`` game pairs.

    Returns pair id -> true quality of every pair created.
    """
    truths: dict[int, int] = {}
    for pool, size in EXPERT_POOLS:
        if not await pool_pairs(session, pool):
            truths.update(await pool_upload(session, pool=pool, qualities=balanced_qualities(size, seed), tag=tag))
    truths.update(await pool_upload(session, pool="game", qualities=balanced_qualities(pairs, seed), tag=tag))
    return truths


async def pairs_by_content(session) -> dict[tuple[str, str], int]:
    """(image URL, caption) -> pair id of every pair on the server. A rater is served no pair id
    (SPEC 2.5: it would tell a control apart), so the crowd finds the pair it was served by what
    it was shown."""
    index: dict[tuple[str, str], int] = {}
    for pool in ("tutorial", "probation", "control", "game"):
        for pair in await pool_pairs(session, pool):
            index[(pair["image"]["url"], pair["caption"])] = pair["id"]
    return index


async def expert_ratings(session) -> dict[int, int]:
    """Pair id -> expert rating of every tutorial, probation and control pair on the server."""
    ratings: dict[int, int] = {}
    for pool, _ in EXPERT_POOLS:
        for pair in await pool_pairs(session, pool):
            if pair.get("expert_rating") is not None:
                ratings[pair["id"]] = pair["expert_rating"]
    return ratings
