"""`manage.py prime_pairs` end to end on PostgreSQL: pairs/s of the scorer alone and of the whole command.

Not a test: it prints figures. It builds a database of its own (``--db``, dropped and rebuilt)
with a synthetic import: ``--images`` image rows and ``--pairs`` pending game pairs (the
captions of one image created together, 1.6 per image by default, as in VICR), over
``--files`` distinct JPEG files of 640x480 (image rows beyond that reuse the files under their
own sha256: each is still decoded and encoded on its own, but its file is read from the page
cache; a million distinct files would need ~100 GB of disk). The priming model is ViT-B-32
with random weights, saved as an open_clip folder (RATINGGAME_PRIMING_MODEL). Then:

  (d) the database side alone: the command over ``--db-pairs`` other pairs with a scorer that
      costs nothing (a constant score, no file read): listing, claims, loads and writes, in
      batches of ``--db-batch-size`` (a GPU's, 256, by default). Twice, over pairs of their own:
      on the PostgreSQL path (a claim and its rows in one statement per chunk, a batch stored in
      one statement) and on the portable path (SQLite's), for the ratio;
  (s) the scorer alone: the registry's scorers over the pairs, batch by batch, rows read
      beforehand (file reads, decoding, forward passes: no database);
  (w) the whole command over the same pairs, the model already loaded in this process (as in
      a long-lived worker) with an empty embedding cache; goal: (w) >= 70% of (s);
  resume: the command as a process of its own over ``--resume-pairs`` pairs reset to pending,
      killed (``--kill``, SIGKILL by default) once ``--kill-at`` of them are primed, then run
      again: every pair ends with exactly two primes. A run killed outright leaves the batches
      it claimed ahead running until PRIMING_STALE_SECONDS; the rerun here sets it to 0, since
      the bench knows the killed run is dead.

    .venv/bin/python bench/bench_prime_pairs.py                     # CPU, reduced: 2,000 pairs, 1,250 images
    .venv/bin/python bench/bench_prime_pairs.py --device cuda --pairs 1000000 --images 625000 --batch-size 256
    .venv/bin/python bench/bench_prime_pairs.py --pairs 0                 # (d) only: the database side
"""

import argparse
import contextlib
import io
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from helpers import database_create, database_drop  # bench/helpers.py, beside this script

ROOT = Path(__file__).resolve().parents[1]
PYTHON = str(ROOT / ".venv" / "bin" / "python")
sys.path.insert(0, str(ROOT))


def model_folder_save(folder: Path, model_name: str) -> None:
    """Random weights of ``model_name`` in open_clip's folder layout (what load_scorer reads)."""
    import open_clip
    import torch
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    model = open_clip.create_model(model_name, pretrained=None)
    config = {"model_cfg": open_clip.get_model_config(model_name), "preprocess_cfg": model.visual.preprocess_cfg}
    (folder / "open_clip_config.json").write_text(json.dumps(config))
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(folder / "open_clip_model.safetensors"))


def jpeg_files_write(media: Path, count: int) -> None:
    from bench.bench_priming import synthetic_pairs

    folder = media / "images" / "bench"
    folder.mkdir(parents=True, exist_ok=True)
    for n, (_, data, _) in enumerate(synthetic_pairs(count, count, seed=7)):
        (folder / f"{n}.jpg").write_bytes(data)


def rows_insert(*, images: int, pairs: int, files: int, first: int) -> list[int]:
    """``images`` image rows and ``pairs`` pending game pairs, in a few INSERT ... SELECT statements.

    Pair k belongs to image k * images // pairs: an image's captions are consecutive, as an
    import creates them. Returns the new pairs' ids."""
    from django.db import connection

    from ratinggame.models import CaptionPair, Image, Pool, PrimingStatus

    def defaults_of(model, given: set[str]) -> dict:
        return {
            field.column: field.get_db_prep_save(field.get_default(), connection)
            for field in model._meta.concrete_fields
            if not field.primary_key and field.name not in given
        }

    def quoted(columns) -> str:
        return ", ".join(connection.ops.quote_name(column) for column in columns)  # "references" is an SQL keyword

    with connection.cursor() as cursor:
        image_table, pair_table = Image._meta.db_table, CaptionPair._meta.db_table
        defaults = defaults_of(Image, {"file", "sha256", "width", "height", "original_name", "source", "created_at"})
        cursor.execute(
            f"INSERT INTO {image_table} (file, sha256, width, height, original_name, source, created_at, "  # noqa: S608 - names from the model
            f"{quoted(defaults)}) SELECT 'images/bench/' || (g %% %s) || '.jpg', lpad(to_hex(g), 64, '0'), 640, 480, "
            f"g || '.jpg', 'bench', now(), {', '.join(['%s'] * len(defaults))} "
            f"FROM generate_series(%s, %s) AS g ORDER BY g RETURNING id",
            [files, *defaults.values(), first, first + images - 1],
        )
        image_ids = sorted(row[0] for row in cursor.fetchall())
        defaults = defaults_of(CaptionPair, {"image", "caption", "created_at", "pool", "priming_status"})
        columns = quoted(defaults)
        placeholders = ", ".join(["%s"] * len(defaults))
        cursor.execute(
            f"INSERT INTO {pair_table} (image_id, caption, pool, priming_status, created_at, {columns}) "  # noqa: S608 - names from the model
            f"SELECT %s + (g::bigint * %s / %s), 'a man riding a red bike next to a bus in a city street ' || g, "
            f"%s, %s, now(), {placeholders} FROM generate_series(0, %s) AS g ORDER BY g RETURNING id",
            [image_ids[0], images, pairs, Pool.GAME, PrimingStatus.PENDING, *defaults.values(), pairs - 1],
        )
        ids = sorted(row[0] for row in cursor.fetchall())
        cursor.execute("ANALYZE")
    return ids


class FreeScorer:
    """Costs nothing: a constant raw score, no file read. What it leaves is the database side."""

    label = "bench"
    explains = False
    refit = True
    identity = "bench: a constant score"

    def __init__(self) -> None:
        from scoring.priming.clip_metrics import ClipS

        self.metric = ClipS.metric

    @classmethod
    def default_knots(cls):
        from scoring.priming.calibration import default_knots

        return default_knots()

    def score_pairs(self, pairs):
        from scoring.priming.scorer import RawScore

        return [RawScore(value=0.75)] * len(pairs)


def command_run(**options) -> float:
    """``prime_pairs`` in this process; its wall time (progress bar kept off the output)."""
    from django.core.management import call_command

    started = time.perf_counter()
    with contextlib.redirect_stderr(io.StringIO()):
        call_command("prime_pairs", stdout=io.StringIO(), **options)
    return time.perf_counter() - started


def database_side(db_pairs: int, images: int, files: int, first_image: int, batch_size: int, fast: bool) -> float:
    """pairs/s of the command with a free scorer over ``db_pairs`` new pairs; ``fast``: the
    PostgreSQL statements of scoring.priming.store, else the portable path."""
    from scoring.models import ModelRating
    from scoring.priming import runner
    from scoring.priming.configuration import PrimingModels

    ids = rows_insert(images=images, pairs=db_pairs, files=files, first=first_image)
    original = PrimingModels.scorers, runner.fast_path
    PrimingModels.scorers = lambda self: [FreeScorer()]
    runner.fast_path = lambda: fast
    try:
        seconds = command_run(batch_size=batch_size)
    finally:
        PrimingModels.scorers, runner.fast_path = original
    primes = ModelRating.objects.filter(pair_id__in=ids).count()
    assert primes == 2 * db_pairs, f"{primes} primes for {db_pairs} pairs"
    return db_pairs / seconds


def scorer_alone(ids: list[int]) -> float:
    from django.core.files.storage import default_storage

    from ratinggame.models import CaptionPair
    from scoring.pictures import StoredImage
    from scoring.priming.configuration import PrimingModels, loaded_models_clear
    from scoring.priming.scorer import PrimingPair

    loaded_models_clear()
    models = PrimingModels.from_settings()
    scorers = models.scorers()
    rows = list(
        CaptionPair.objects.filter(pk__in=ids)
        .order_by("pk")
        .values_list("pk", "image__sha256", "image__file", "caption")
        .iterator(chunk_size=10_000)
    )

    def read(name: str):
        def load() -> bytes:
            with default_storage.open(name, "rb") as handle:
                return handle.read()

        return load

    started = time.perf_counter()
    for start in range(0, len(rows), models.batch_size):
        batch = [
            PrimingPair(pk=pk, image_key=sha, load_image=StoredImage(read=read(name)), caption=caption)
            for pk, sha, name, caption in rows[start : start + models.batch_size]
        ]
        for scorer in scorers:
            scorer.score_pairs(batch)
    _sync()
    return len(rows) / (time.perf_counter() - started)


def whole_command(ids: list[int]) -> float:
    from scoring.models import ModelRating
    from scoring.priming.configuration import PrimingModels, loaded_models_clear

    loaded_models_clear()
    PrimingModels.from_settings().scorers()  # loaded before the clock starts, as on a running worker
    seconds = command_run(pending_only=True)
    primes = ModelRating.objects.filter(pair_id__in=ids).count()
    assert primes == 2 * len(ids), f"{primes} primes for {len(ids)} pairs"
    return len(ids) / seconds


def resume_after_kill(ids: list[int], env: dict, kill_at: float, sig: signal.Signals) -> dict:
    from django.db.models import Count

    from ratinggame.models import CaptionPair, PrimingStatus
    from scoring.models import ModelRating

    ModelRating.objects.filter(pair_id__in=ids).delete()
    CaptionPair.objects.filter(pk__in=ids).update(
        priming_status=PrimingStatus.PENDING, primes=[], priming_claimed_at=None, priming_error=""
    )
    command = [PYTHON, "manage.py", "prime_pairs", "--pending-only"]
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    started = time.perf_counter()
    done = 0
    while process.poll() is None:
        done = CaptionPair.objects.filter(pk__in=ids, priming_status=PrimingStatus.DONE).count()
        if done >= kill_at * len(ids):
            process.send_signal(sig)
            break
        time.sleep(0.5)
    process.wait(timeout=120)
    statuses = dict(
        CaptionPair.objects.filter(pk__in=ids).values_list("priming_status").annotate(n=Count("id")).order_by()
    )
    first_seconds = time.perf_counter() - started
    rerun_started = time.perf_counter()
    rerun = subprocess.run(
        command, cwd=ROOT, env={**env, "RATINGGAME_PRIMING_STALE_SECONDS": "0"}, capture_output=True, text=True
    )
    rerun_seconds = time.perf_counter() - rerun_started
    per_pair = ModelRating.objects.filter(pair_id__in=ids).values_list("pair_id").annotate(n=Count("id"))
    counts = {n for _, n in per_pair}
    return {
        "killed_after_s": first_seconds,
        "at_kill": statuses,
        "rerun_exit": rerun.returncode,
        "rerun_says": rerun.stdout.strip().splitlines()[-1:] or rerun.stderr.strip().splitlines()[-1:],
        "rerun_s": rerun_seconds,
        "pairs_with_primes": per_pair.count(),
        "primes_per_pair": sorted(counts),
    }


def _sync() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def arguments() -> argparse.Namespace:
    """The command line; its defaults are the reduced CPU run of the module's docstring."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432", help="PostgreSQL server URL (no db)")
    parser.add_argument("--db", default="bench_prime_pairs")
    parser.add_argument("--pairs", type=int, default=2000, help="pairs of (s), (w) and resume; 0: (d) only")
    parser.add_argument("--images", type=int, default=None, help="image rows (default: pairs / 1.6)")
    parser.add_argument("--files", type=int, default=4000, help="distinct JPEG files at most")
    parser.add_argument("--db-pairs", type=int, default=100_000, help="pairs of each database-side run (d)")
    parser.add_argument("--db-repeat", type=int, default=1, help="runs of (d) on each path (the median is printed)")
    parser.add_argument("--db-batch-size", type=int, default=256, help="batch size of the database-side runs (d)")
    parser.add_argument("--resume-pairs", type=int, default=20_000, help="pairs of the kill-and-resume run, at most")
    parser.add_argument("--kill-at", type=float, default=0.3, help="share primed when the first run is killed")
    parser.add_argument("--kill", choices=["KILL", "TERM"], default="KILL")
    parser.add_argument("--batch-size", type=int, default=None, help="default: 64 on CPU, 256 on CUDA")
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    parser.add_argument("--model", default="ViT-B-32")
    parser.add_argument("--keep", action="store_true", help="keep the database and the work folder")
    return parser.parse_args()


def bench_env(db_url: str, work: Path, device: str, batch_size: int) -> dict:
    """The environment of this process and of the resume run's commands: the bench database, the
    work folder's media and model, production settings."""
    return {
        **os.environ,
        "DATABASE_URL": db_url,
        "MEDIA_ROOT": str(work / "media"),
        "RATINGGAME_PRIMING_MODEL": str(work / "model"),
        "RATINGGAME_PRIMING_PRETRAINED": "",
        "RATINGGAME_PRIMING_DEVICE": device,
        "RATINGGAME_PRIMING_BATCH_SIZE": str(batch_size),
        "DJANGO_SETTINGS_MODULE": "ratinggame.settings",
        "DJANGO_DEBUG": "0",
        "DJANGO_SECRET_KEY": "bench-only",
        "DJANGO_ALLOWED_HOSTS": "localhost",
        "DJANGO_LOG_LEVEL": "WARNING",
    }


def main() -> None:
    args = arguments()

    import torch

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    batch_size = args.batch_size or (256 if device.startswith("cuda") else 64)
    images = args.images or round(args.pairs / 1.6)
    files = max(1, min(args.files, images))
    work = Path(tempfile.mkdtemp(prefix="bench_prime_pairs_"))
    db_url = f"{args.pg}/{args.db}"
    env = bench_env(db_url, work, device, batch_size)
    os.environ.update(env)
    database_create(db_url)
    import django

    django.setup()
    from django.core.management import call_command

    try:
        started = time.perf_counter()
        call_command("migrate", verbosity=0)
        if args.pairs:
            model_folder_save(work / "model", args.model)
            jpeg_files_write(work / "media", files)
            print(f"{args.model} random weights on {device}, batch size {batch_size}; load average {os.getloadavg()}")
            print(f"schema, model and {files} JPEG files of 640x480 in {time.perf_counter() - started:.0f} s")
        # (d) first: the command primes every pending pair, so the measured pairs come after it.
        first_image = database_side_report(args, files)
        if args.pairs:
            priming_report(args, env, images, files, first_image)
    finally:
        from django.db import connections

        connections.close_all()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
            database_drop(f"{args.pg}/{args.db}")


def database_side_report(args, files: int) -> int:
    """(d) on both paths, ``--db-repeat`` times each, and its lines; the first image row that the
    pairs measured after it may take."""
    d_images = max(1, args.db_pairs // 2)
    first_image = 0
    if not args.db_pairs:
        return first_image
    print(f"load average before (d): {os.getloadavg()}")
    fast, portable = [], []
    for _ in range(args.db_repeat):  # interleaved: the machine's drifts fall on both paths
        for path, runs in ((False, portable), (True, fast)):
            runs.append(database_side(args.db_pairs, d_images, files, first_image, args.db_batch_size, path))
            first_image += d_images
    load = os.getloadavg()
    print(f"(d) database side alone, {args.db_pairs} pairs, batch {args.db_batch_size}; load average {load}")
    d, d_portable = statistics.median(fast), statistics.median(portable)
    runs = f"  (runs: {', '.join(f'{x:.0f}' for x in fast)})" if args.db_repeat > 1 else ""
    print(f"    PostgreSQL statements (one per batch):         {d:10.1f} pairs/s   {d / d_portable:.1f}x{runs}")
    runs = f"  (runs: {', '.join(f'{x:.0f}' for x in portable)})" if args.db_repeat > 1 else ""
    print(f"    portable path (SQLite's):                      {d_portable:10.1f} pairs/s{runs}")
    return first_image


def priming_report(args, env: dict, images: int, files: int, first_image: int) -> None:
    """(s), (w) and the kill-and-resume run over ``--pairs`` new pending pairs, and their lines."""
    started = time.perf_counter()
    ids = rows_insert(images=images, pairs=args.pairs, files=files, first=first_image)
    print(f"{args.pairs} pairs over {images} images inserted in {time.perf_counter() - started:.0f} s")
    s = scorer_alone(ids)
    w = whole_command(ids)
    resume = resume_after_kill(ids[: args.resume_pairs], env, args.kill_at, getattr(signal, f"SIG{args.kill}"))
    print(f"load average after: {os.getloadavg()}")
    print(f"(s) scorer alone, {args.pairs} pairs:                {s:10.1f} pairs/s")
    print(f"(w) whole command, same pairs:                  {w:10.1f} pairs/s   (w)/(s) = {100 * w / s:.1f}%")
    print("    goal: (w) >= 70% of (s)")
    print(f"resume: {len(ids[: args.resume_pairs])} pairs, SIG{args.kill} after {resume['killed_after_s']:.1f} s")
    print(f"    at the kill: {resume['at_kill']}")
    print(f"    rerun: exit {resume['rerun_exit']} in {resume['rerun_s']:.1f} s ({resume['rerun_says']})")
    after = f"{resume['pairs_with_primes']} pairs with primes, primes per pair {resume['primes_per_pair']}"
    print(f"    after: {after}")


if __name__ == "__main__":
    main()
