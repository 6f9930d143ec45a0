"""The validated dataset export (SPEC section 6): tables, statistics, report, datasheet, manifest.

`export_build` writes one bundle into a folder:

- ``pairs.<fmt>``: one row per exported pair (image, caption, source, split, the human
  ratings' count / mean / rounded consensus / sd, each stored model score raw and calibrated,
  and beside FLEUR's scores the model's explanation where it gave one);
- ``ratings.<fmt>``: one row per exported human rating (pseudonymous rater, time, seconds spent);
- ``statistics.json``: the virtual-rater agreement report, distributions, counts, splits and
  the metric-correlation table;
- ``report.html`` (self-contained, inline SVG) and ``datasheet.md``;
- ``wright_map.svg``: the latest rater-competency analysis's Wright map (the paper's Figure 3),
  when one has finished; its latent regression is in ``statistics.json`` and the report;
- ``manifest.json``: parameters, code version, counts and the sha256 of every other file;
- ``images/`` with ``with_images``.

The management command `export_dataset` and the Celery task `scoring.tasks.export_job_run` both call it.
"""

import json
import shutil
import subprocess
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from django.conf import settings
from django.core.files.storage import default_storage

from ratinggame.models import MIN_HUMAN_RATINGS
from scoring.agreement import virtual_rater_report
from scoring.export.data import ExportData, Progress, export_data_collect, iso_utc
from scoring.export.files import file_sha256, folder_files
from scoring.export.formats import DEFAULT_FORMATS, FORMATS, formats_parse, table_write
from scoring.export.report import datasheet_render, report_render
from scoring.export.stats import (
    PAPER_TABLE3,
    json_safe,
    metric_correlation,
    pair_summary,
    rating_distribution,
    source_distributions,
)
from scoring.splits import SPLITS, TEST, split_for_image

SAMPLES = 100  # virtual-rater repetitions (SPEC section 6)
WRIGHT_MAP_FILE = "wright_map.svg"
BUNDLE_FILES = ("statistics.json", "report.html", "datasheet.md", WRIGHT_MAP_FILE, "manifest.json")
PAIR_COLUMNS = (
    ("pair_id", "int"),
    ("image_file", "str"),
    ("image_sha256", "str"),
    ("image_original_name", "str"),
    ("caption", "str"),
    ("source", "str"),
    ("split", "str"),
    ("num_ratings", "int"),
    ("mean", "float"),
    ("consensus", "int"),
    ("sd", "float"),
)
RATING_COLUMNS = (
    ("pair_id", "int"),
    ("rater", "str"),
    ("rating", "int"),
    ("submitted_at", "str"),
    ("seconds_spent", "float"),
)


def export_build(
    *,
    out_dir: str | Path,
    min_ratings: int = MIN_HUMAN_RATINGS,
    seed: int = 0,
    formats: Sequence[str] = DEFAULT_FORMATS,
    with_images: bool = False,
    progress: Progress | None = None,
    samples: int = SAMPLES,
) -> dict:
    """Write the bundle into ``out_dir`` and return its counts.

    ``progress(fraction, message)`` is called as the work advances (fraction 0..1). Files an
    earlier export left in ``out_dir`` (its tables, statistics, report, datasheet, manifest and
    images/) are replaced; other files are left alone and are not part of the manifest.
    Raises ValueError for bad parameters.
    """
    formats = formats_parse(formats)
    if isinstance(min_ratings, bool) or not isinstance(min_ratings, int) or min_ratings < 1:
        raise ValueError(f"min_ratings must be a whole number >= 1, got {min_ratings!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be a whole number, got {seed!r}")
    report = progress or (lambda fraction, message: None)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    _bundle_clear(out)
    parameters = {
        "min_ratings": min_ratings,
        "seed": seed,
        "samples": samples,
        "formats": list(formats),
        "with_images": with_images,
    }

    data = export_data_collect(
        min_ratings=min_ratings, progress=lambda fraction, message: report(0.4 * fraction, message)
    )
    splits = {pair.id: split_for_image(pair.image_sha256, seed) for pair in data.pairs}
    report(0.45, "Computing agreement statistics")
    summaries = {pair.id: pair_summary(pair.ratings) for pair in data.pairs}
    statistics = export_statistics(
        data, splits=splits, summaries=summaries, seed=seed, samples=samples, parameters=parameters
    )

    statistics["competency"], wright_map = competency_section(data.pseudonyms)

    report(0.6, "Writing tables")
    pair_columns, pair_rows = _pair_table(data, splits, summaries)
    table_write(out, "pairs", pair_columns, pair_rows, formats)
    rating_rows = [(r.pair_id, r.rater, r.value, iso_utc(r.submitted_at), round(r.seconds, 3)) for r in data.ratings]
    table_write(out, "ratings", RATING_COLUMNS, rating_rows, formats)
    if with_images:
        statistics["counts"]["images_missing"] = _images_copy(data, out / "images", report)

    report(0.95, "Writing the report and datasheet")
    _json_write(out / "statistics.json", statistics)
    if wright_map:
        (out / WRIGHT_MAP_FILE).write_text(wright_map + "\n", encoding="utf-8")
    (out / "report.html").write_text(report_render(statistics, wright_map_svg=wright_map), encoding="utf-8")
    (out / "datasheet.md").write_text(datasheet_render(statistics), encoding="utf-8")
    _manifest_write(out, parameters, statistics["counts"])
    report(1.0, "Done")
    return statistics["counts"]


def export_statistics(
    data: ExportData, *, splits: dict[int, str], summaries: dict[int, tuple], seed: int, samples: int, parameters: dict
) -> dict:
    """statistics.json: agreement, distributions, counts, splits and metric correlations.

    ``summaries`` holds each pair's (mean, consensus, sd) from `pair_summary`.
    """
    ratings = {pair.id: pair.ratings for pair in data.pairs}
    consensus = {pair_id: summary[1] for pair_id, summary in summaries.items()}
    try:
        agreement, agreement_note = virtual_rater_report(list(ratings.values()), samples=samples, seed=seed), ""
    except ValueError as error:  # fewer than 2 pairs with 3 ratings: nothing to compare
        agreement, agreement_note = None, str(error)
    split_counts = {name: {"images": 0, "pairs": 0, "ratings": 0} for name in SPLITS}
    split_images: dict[str, set[int]] = {name: set() for name in SPLITS}
    for pair in data.pairs:
        split = splits[pair.id]
        split_images[split].add(pair.image_id)
        split_counts[split]["pairs"] += 1
        split_counts[split]["ratings"] += len(pair.ratings)
    for name in SPLITS:
        split_counts[name]["images"] = len(split_images[name])
    test_ratings = {pair_id: values for pair_id, values in ratings.items() if splits[pair_id] == TEST}
    correlations, model_scores = [], []
    for column in data.model_columns:
        by_pair = data.model_scores[(column.metric, column.model_identity)]
        model_scores.append(
            {
                "metric": column.metric,
                "model_identity": column.model_identity,
                "column_raw": f"score__{column.stem}__raw",
                "column_calibrated": f"score__{column.stem}__calibrated",
                **({"column_explanation": f"score__{column.stem}__explanation"} if column.explained else {}),
                "pairs": len(by_pair),
            }
        )
        for kind, index in (("raw", 0), ("calibrated", 1)):
            scores = {pair_id: values[index] for pair_id, values in by_pair.items()}
            correlations.append(
                {
                    "metric": column.metric,
                    "model_identity": column.model_identity,
                    "score": kind,
                    "split": TEST,
                    **metric_correlation(scores, test_ratings),
                }
            )
    return json_safe(
        {
            "parameters": parameters,
            "counts": data.counts,
            "splits": split_counts,
            "agreement": agreement,
            "agreement_note": agreement_note,
            "paper_table3": PAPER_TABLE3,
            "rating_distribution": rating_distribution(consensus.values()),
            "source_distributions": source_distributions((pair.source, consensus[pair.id]) for pair in data.pairs),
            "model_scores": model_scores,
            "metric_correlations": correlations,
        }
    )


def _pair_table(
    data: ExportData, splits: dict[int, str], summaries: dict[int, tuple]
) -> tuple[list[tuple[str, str]], list[tuple]]:
    columns = list(PAIR_COLUMNS)
    for column in data.model_columns:
        columns += [(f"score__{column.stem}__raw", "float"), (f"score__{column.stem}__calibrated", "float")]
        if column.explained:
            columns.append((f"score__{column.stem}__explanation", "str"))
    score_maps = [
        (
            data.model_scores[(column.metric, column.model_identity)],
            data.model_explanations.get((column.metric, column.model_identity), {}) if column.explained else None,
        )
        for column in data.model_columns
    ]
    rows = []
    for pair in data.pairs:
        mean, consensus, sd = summaries[pair.id]
        row = [
            pair.id,
            _file_name(pair.image_name),
            pair.image_sha256,
            pair.image_original_name,
            pair.caption,
            pair.source,
            splits[pair.id],
            len(pair.ratings),
            mean,
            consensus,
            sd,
        ]
        for by_pair, explanations in score_maps:
            row.extend(by_pair.get(pair.id, (None, None)))
            if explanations is not None:
                row.append(explanations.get(pair.id))
        rows.append(tuple(row))
    return columns, rows


def _file_name(storage_name: str) -> str:
    """images/ab/<sha256>.png -> <sha256>.png (storage names always use "/")."""
    return storage_name.rsplit("/", 1)[-1]


def _images_copy(data: ExportData, folder: Path, report: Progress) -> int:
    """Copy each exported image once into ``folder``; return how many files were missing."""
    folder.mkdir(exist_ok=True)
    names = sorted({pair.image_name for pair in data.pairs})
    missing = 0
    for index, name in enumerate(names):
        if index % 100 == 0:
            report(0.7 + 0.25 * index / len(names), f"Copying images ({index} of {len(names)})")
        try:
            with default_storage.open(name, "rb") as source, (folder / _file_name(name)).open("wb") as target:
                shutil.copyfileobj(source, target)
        except FileNotFoundError:
            missing += 1
    return missing


def _manifest_write(out: Path, parameters: dict, counts: dict) -> None:
    files = {}
    for name in _bundle_names(out):
        if name != "manifest.json":
            files[name] = {"sha256": file_sha256(out / name), "bytes": (out / name).stat().st_size}
    manifest = {
        "dataset": "Validated image caption ratings (rating game export)",
        "created_at": iso_utc(datetime.now(UTC)),
        "code_version": code_version(),
        "parameters": parameters,
        "counts": counts,
        "files": files,
    }
    _json_write(out / "manifest.json", manifest)


def code_version() -> str:
    """``git describe --always --dirty`` of the code base, or "unknown" outside a git checkout."""
    try:
        result = subprocess.run(
            ["git", "describe", "--always", "--dirty"],
            cwd=settings.BASE_DIR,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return result.stdout.strip() if result.returncode == 0 and result.stdout.strip() else "unknown"


def _bundle_names(out: Path) -> list[str]:
    """The files of a bundle found in ``out`` (relative, sorted); other files there are not ours."""
    top = [*BUNDLE_FILES, *(f"{stem}.{fmt}" for stem in ("pairs", "ratings") for fmt in FORMATS)]
    names = [name for name in top if (out / name).is_file()]
    if (out / "images").is_dir():
        names += [f"images/{path.as_posix()}" for path in folder_files(out / "images")]
    return sorted(names)


def _bundle_clear(out: Path) -> None:
    """Remove what an earlier export wrote here, so no stale table or image is left beside the new ones."""
    for name in _bundle_names(out):
        if not name.startswith("images/"):
            (out / name).unlink()
    if (out / "images").is_dir():
        shutil.rmtree(out / "images")


def _json_write(path: Path, value: dict) -> None:
    path.write_text(json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False) + "\n", encoding="utf-8")


def competency_section(pseudonyms: dict[int, str]) -> tuple[dict, str]:
    """The latest finished rater-competency analysis (PCM, latent regression, Wright map).

    Returns (the ``competency`` entry of statistics.json, the Wright map SVG or ""). Raters stay
    pseudonymous: competencies are listed under the export's pseudonyms (``pseudonyms``: user id
    -> pseudonym) for the raters who have exported ratings, never under usernames or internal
    ids; the others are only counted. Without a finished analysis the entry says so.
    """
    from annotators.competency.jobs import latest_competency_summary
    from annotators.models import RaterProfile

    summary = latest_competency_summary()
    if summary is None:
        return {
            "available": False,
            "note": "No rater-competency analysis had finished when this export was made: no Wright map "
            "and no latent regression. Staff can run it from the dashboard (Refresh the analysis).",
        }, ""
    user_of = dict(RaterProfile.objects.filter(user_id__in=list(pseudonyms)).values_list("id", "user_id"))
    raters = []
    for profile_id, (ability, se) in summary["abilities"].items():
        pseudonym = pseudonyms.get(user_of.get(int(profile_id)))
        if pseudonym is not None:
            raters.append({"rater": pseudonym, "competency": ability, "se": se})
    raters.sort(key=lambda row: row["rater"])
    svg = summary["wright_map_svg"] or ""
    section = {
        "available": True,
        "note": "",
        "finished_at": summary["finished_at"],
        "game_ratings_count": summary["game_ratings_count"],
        "n_raters": summary["n_raters"],
        "n_items": summary["n_items"],
        "n_responses": summary["n_responses"],
        "duration_seconds": summary["duration_seconds"],
        "details": summary["details"],
        "regression": summary["regression"],
        "paper_regression": summary["paper_regression"],
        "wright_map_file": WRIGHT_MAP_FILE if svg else None,
        "raters": raters,
        "raters_not_in_export": len(summary["abilities"]) - len(raters),
    }
    return json_safe(section), svg
