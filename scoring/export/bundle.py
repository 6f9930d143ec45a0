"""The validated dataset export (SPEC section 6): tables, statistics, report, datasheet, manifest.

`export_build` writes one bundle into a folder:

- ``pairs.<fmt>``: one row per exported pair (image, caption, source, split, the human
  ratings' count / mean / rounded consensus / sd, each stored model score raw and calibrated,
  and beside FLEUR's scores the model's explanation where it gave one);
- ``ratings.<fmt>``: one row per exported human rating (pseudonymous rater, time, seconds spent);
- ``control_ratings.<fmt>``: one row per rating of a control pair (expert-rated, hidden in the
  game, SPEC 2.5): never part of the pairs or ratings above, with each rater's control agreement
  summarised in ``statistics.json``;
- ``polaris/``: the pairs in the layout of the Polaris and Nebula benchmarks (``img``, ``cand``,
  ``refs``, ``human_score``), a dataset of its own for the caption-metric toolkits;
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
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from django.conf import settings
from django.core.files.storage import default_storage

from ratinggame.models import MIN_HUMAN_RATINGS, LevelPrior
from scoring import aggregation
from scoring.bootstrap import RESAMPLES
from scoring.export.card import (
    CARD_FILE,
    CONFIGS,
    DATA_FOLDER,
    UNKNOWN_LICENSE,
    card_format,
    card_front_matter,
    rounding_groups,
    rows_by_split,
    split_file,
)
from scoring.export.data import ExportData, Progress, export_data_collect
from scoring.export.files import file_sha256, folder_files
from scoring.export.formats import DEFAULT_FORMATS, FORMATS, WRITERS, formats_parse, iso_utc, table_write
from scoring.export.polaris import CARD as POLARIS_CARD
from scoring.export.polaris import FOLDER as POLARIS_FOLDER
from scoring.export.polaris import PolarisRow, polaris_card, polaris_write, split_path
from scoring.export.report import dataset_card_render, datasheet_render, report_render
from scoring.export.stats import (
    MIN_IMAGES_TO_INTERPRET,
    MIN_PAIRS_TO_INTERPRET,
    PAPER_TABLE3,
    agreement_block,
    json_safe,
    metric_correlation,
    pair_summary,
    paper_comparison,
    rating_distribution,
    source_distributions,
)
from scoring.splits import SPLITS, TEST, split_for_image

SAMPLES = 100  # virtual-rater repetitions (SPEC section 6)
DATASET_NAME = "Validated image caption ratings (rating game export)"
NO_IMAGE_SOURCE = "(not recorded at import)"
WRIGHT_MAP_FILE = "wright_map.svg"
BUNDLE_FILES = ("statistics.json", "report.html", "datasheet.md", CARD_FILE, WRIGHT_MAP_FILE, "manifest.json")
BUNDLE_FOLDERS = ("images", DATA_FOLDER, POLARIS_FOLDER)
# (name, type[, decimals in CSV and JSON Lines]); Parquet keeps full precision (formats.py).
PAIR_COLUMNS = (
    ("pair_id", "int"),
    ("image_file", "str"),
    ("image_sha256", "str"),
    ("image_original_name", "str"),
    ("image_source", "str"),
    ("caption", "str"),
    ("source", "str"),
    ("split", "str"),
    ("num_ratings", "int"),
    ("mean", "float", 4),
    ("consensus", "int"),
    ("sd", "float", 4),
    ("label", "int"),
    ("label_probability", "float", 4),
    ("ds_label", "int"),
    ("ds_posterior", "float", 4),
)
RATING_COLUMNS = (
    ("pair_id", "int"),
    ("rater", "str"),
    ("rating", "int"),
    ("submitted_at", "datetime"),
    ("seconds_spent", "float", 3),
)
CONTROL_RATING_COLUMNS = (
    ("control_pair_id", "int"),
    ("image_file", "str"),
    ("caption", "str"),
    ("expert_rating", "int"),
    ("rater", "str"),
    ("rating", "int"),
    ("agreement", "int"),
    ("submitted_at", "datetime"),
    ("seconds_spent", "float", 3),
)
TABLES = ("pairs", "ratings", "control_ratings")
RAW_SCORE_DIGITS, CALIBRATED_DIGITS = 6, 4  # model scores: raw cosine-based values differ in the 4th decimal


def export_build(
    *,
    out_dir: str | Path,
    min_ratings: int = MIN_HUMAN_RATINGS,
    seed: int = 0,
    formats: Sequence[str] = DEFAULT_FORMATS,
    with_images: bool = False,
    progress: Progress | None = None,
    samples: int = SAMPLES,
    resamples: int = RESAMPLES,
) -> dict:
    """Write the bundle into ``out_dir`` and return its counts.

    ``progress(fraction, message)`` is called as the work advances (fraction 0..1). Files an
    earlier export left in ``out_dir`` (its tables, statistics, report, datasheet, manifest and
    images/) are replaced; other files are left alone and are not part of the manifest.
    Raises ValueError for bad parameters.
    """
    formats = formats_parse(formats)
    _parameters_check(min_ratings=min_ratings, seed=seed, resamples=resamples)
    report = progress or (lambda fraction, message: None)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    _bundle_clear(out)
    parameters = {
        "min_ratings": min_ratings,
        "seed": seed,
        "samples": samples,
        "resamples": resamples,
        "formats": list(formats),
        "with_images": with_images,
        # When a pair had enough ratings (SPEC 5.1): what decided how many each validated pair got.
        "assignment_policy": settings.RATINGGAME["ASSIGNMENT_POLICY"],
        "settled_threshold": settings.RATINGGAME["SETTLED_THRESHOLD"],
        "level_prior": LevelPrior.in_force(),
    }

    data = export_data_collect(
        min_ratings=min_ratings, progress=lambda fraction, message: report(0.4 * fraction, message)
    )
    splits = {pair.id: split_for_image(pair.image_sha256, seed) for pair in data.pairs}
    report(0.45, "Computing agreement statistics")
    summaries = {pair.id: pair_summary(pair.ratings) for pair in data.pairs}
    statistics = export_statistics(data, splits=splits, summaries=summaries, parameters=parameters)

    statistics["competency"], wright_map = competency_section(data.pseudonyms)
    report(0.55, "Aggregating with Dawid-Skene")
    aggregate = _aggregate(data)
    statistics["rater_quality"] = _rater_quality_section(data, aggregate)

    statistics["image_sources"] = _image_sources(data)
    statistics["control_agreement"] = control_agreement_section(data)

    report(0.6, "Writing tables")
    pair_columns = _tables_write(out, data, splits, summaries, aggregate, formats)
    if with_images:
        statistics["counts"]["images_missing"] = _images_copy(data, out / "images", report)
    report(0.95, "Writing the table for the caption-metric toolkits")
    _polaris_write(out, data, splits, summaries, images=out / "images" if with_images else None)

    report(0.95, "Writing the report and datasheet")
    _documents_write(out, statistics, wright_map)
    _card_write(out, statistics, pairs=len(data.pairs), fmt=card_format(formats), pair_columns=pair_columns)
    _manifest_write(out, parameters, statistics["counts"])
    report(1.0, "Done")
    return statistics["counts"]


def _parameters_check(*, min_ratings: int, seed: int, resamples: int) -> None:
    """Refuse parameters that would give a meaningless bundle (True/False are ints to Python)."""
    if isinstance(min_ratings, bool) or not isinstance(min_ratings, int) or min_ratings < 1:
        raise ValueError(f"min_ratings must be a whole number >= 1, got {min_ratings!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be a whole number, got {seed!r}")
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 0:
        raise ValueError(f"resamples must be a whole number >= 0, got {resamples!r}")


def _tables_write(
    out: Path,
    data: ExportData,
    splits: dict[int, str],
    summaries: dict[int, tuple],
    aggregate: aggregation.Aggregate | None,
    formats: Sequence[str],
) -> list[tuple]:
    """The pairs, ratings and control_ratings tables in each format, and the dataset card's
    per-split copies; returns the pair table's columns, whose model-score part varies by export."""
    pair_columns, pair_rows = _pair_table(data, splits, summaries, aggregate)
    table_write(out, "pairs", pair_columns, pair_rows, formats)
    rating_rows = [(r.pair_id, r.rater, r.value, r.submitted_at, r.seconds) for r in data.ratings]
    table_write(out, "ratings", RATING_COLUMNS, rating_rows, formats)
    control_rows = [
        (c.pair_id, _file_name(c.image_name), c.caption, c.expert_rating, c.rater, c.value, c.agreement, *c.when)
        for c in data.control_ratings
    ]
    table_write(out, "control_ratings", CONTROL_RATING_COLUMNS, control_rows, formats)
    _split_files_write(
        out,
        card_format(formats),
        {"pairs": (pair_columns, pair_rows), "ratings": (RATING_COLUMNS, rating_rows)},
        splits,
    )
    return pair_columns


def _documents_write(out: Path, statistics: dict, wright_map: str) -> None:
    """statistics.json, the Wright map (when an analysis has finished), report.html and datasheet.md."""
    _json_write(out / "statistics.json", statistics)
    if wright_map:
        (out / WRIGHT_MAP_FILE).write_text(wright_map + "\n", encoding="utf-8")
    (out / "report.html").write_text(report_render(statistics, wright_map_svg=wright_map), encoding="utf-8")
    (out / "datasheet.md").write_text(datasheet_render(statistics), encoding="utf-8")


def _card_write(out: Path, statistics: dict, *, pairs: int, fmt: str, pair_columns: list[tuple]) -> None:
    """The Hugging Face dataset card (scoring.export.card), naming the rounding of every table's columns."""
    front_matter = card_front_matter(
        pretty_name=DATASET_NAME,
        license_id=settings.RATINGGAME["DATASET_LICENSE"],
        pairs=pairs,
        fmt=fmt,
    )
    card = dataset_card_render(
        statistics,
        front_matter=front_matter,
        pretty_name=DATASET_NAME,
        code_version=code_version(),
        rounding=rounding_groups([*pair_columns, *RATING_COLUMNS, *CONTROL_RATING_COLUMNS]),
    )
    (out / CARD_FILE).write_text(card, encoding="utf-8")


def export_statistics(
    data: ExportData, *, splits: dict[int, str], summaries: dict[int, tuple], parameters: dict
) -> dict:
    """statistics.json: agreement (with 95% intervals, overall and per caption source),
    distributions, counts, splits and metric correlations.

    ``summaries`` holds each pair's (mean, consensus, sd) from `pair_summary`; ``parameters``
    the export's (seed, samples, resamples).
    """
    ratings = {pair.id: pair.ratings for pair in data.pairs}
    consensus = {pair_id: summary[1] for pair_id, summary in summaries.items()}
    options = {key: parameters[key] for key in ("samples", "seed", "resamples")}
    overall = agreement_block(list(ratings.values()), **options)
    by_source: dict[str, list[list[int]]] = {}
    for pair in data.pairs:
        by_source.setdefault(pair.source, []).append(pair.ratings)
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
    few_test_images = split_counts[TEST]["images"] < MIN_IMAGES_TO_INTERPRET
    model_scores = [
        {
            "metric": column.metric,
            "model_identity": column.model_identity,
            "column_raw": f"score__{column.stem}__raw",
            "column_calibrated": f"score__{column.stem}__calibrated",
            **({"column_explanation": f"score__{column.stem}__explanation"} if column.explained else {}),
            "pairs": len(data.model_scores[(column.metric, column.model_identity)]),
        }
        for column in data.model_columns
    ]
    correlations = _metric_correlations(data, test_ratings, parameters, few_test_images=few_test_images)
    test_by_source: dict[str, dict[int, list[int]]] = {source: {} for source in by_source}
    test_images_by_source: dict[str, set[int]] = {source: set() for source in by_source}
    for pair in data.pairs:
        if splits[pair.id] == TEST:
            test_by_source[pair.source][pair.id] = pair.ratings
            test_images_by_source[pair.source].add(pair.image_id)
    correlations_by_source = {
        source: _metric_correlations(
            data,
            test_by_source[source],
            parameters,
            few_test_images=len(test_images_by_source[source]) < MIN_IMAGES_TO_INTERPRET,
        )
        for source in sorted(by_source)
    }
    return json_safe(
        {
            "parameters": parameters,
            "counts": data.counts,
            "splits": split_counts,
            "agreement": overall["virtual_raters"],
            "agreement_note": overall["note"],
            "agreement_too_few": overall["too_few"],
            "agreement_all_ratings": overall["all_ratings"],
            "agreement_by_source": {
                source: agreement_block(values, **options) for source, values in sorted(by_source.items())
            },
            "paper_table3": PAPER_TABLE3,
            "paper_comparison": paper_comparison(overall["virtual_raters"]),
            "minimums": {"pairs": MIN_PAIRS_TO_INTERPRET, "test_images": MIN_IMAGES_TO_INTERPRET},
            "rating_distribution": rating_distribution(consensus.values()),
            "source_distributions": source_distributions((pair.source, consensus[pair.id]) for pair in data.pairs),
            "model_scores": model_scores,
            "metric_correlations": correlations,
            "metric_correlations_by_source": correlations_by_source,
        }
    )


def _metric_correlations(
    data: ExportData, test_ratings: dict[int, list[int]], parameters: dict, *, few_test_images: bool
) -> list[dict]:
    """τ_c of each stored model score (raw and calibrated) against the human ratings of ``test_ratings``
    (the test split, or one caption source's part of it), each with its bootstrap interval."""
    rows = []
    for column in data.model_columns:
        by_pair = data.model_scores[(column.metric, column.model_identity)]
        for kind, index in (("raw", 0), ("calibrated", 1)):
            scores = {pair_id: values[index] for pair_id, values in by_pair.items()}
            row = metric_correlation(scores, test_ratings, resamples=parameters["resamples"], seed=parameters["seed"])
            row["too_few"] = row["too_few"] or few_test_images
            rows.append(
                {"metric": column.metric, "model_identity": column.model_identity, "score": kind, "split": TEST, **row}
            )
    return rows


def _split_files_write(out: Path, fmt: str, tables: dict[str, tuple], splits: dict[int, str]) -> None:
    """The dataset card's per-split tables (scoring.export.card), in one format."""
    (out / DATA_FOLDER).mkdir(exist_ok=True)
    for config in CONFIGS:
        columns, rows = tables[config]
        for split, chosen in rows_by_split(rows, splits).items():
            WRITERS[fmt].write(out / split_file(config, split, fmt), columns, chosen)


def _polaris_write(
    out: Path, data: ExportData, splits: dict[int, str], summaries: dict[int, tuple], *, images: Path | None
) -> None:
    """The Polaris-layout table and its card (scoring.export.polaris); with images, each row
    carries its image's bytes, read from the bundle's own copy."""

    def image_bytes(name: str) -> bytes | None:
        path = images / name
        return path.read_bytes() if path.is_file() else None

    for split in SPLITS:
        rows = (
            PolarisRow(
                refs=pair.references,
                cand=pair.caption,
                image_file=_file_name(pair.image_name),
                mean=summaries[pair.id][0],
            )
            for pair in data.pairs
            if splits[pair.id] == split
        )
        polaris_write(out / split_path(split), rows, image_bytes if images else None)
    card = polaris_card(
        pretty_name=DATASET_NAME,
        license_id=settings.RATINGGAME["DATASET_LICENSE"] or UNKNOWN_LICENSE,
        splits=SPLITS,
    )
    (out / POLARIS_CARD).write_text(card, encoding="utf-8")


def _image_sources(data: ExportData) -> list[dict]:
    """Where the exported images came from (as recorded at import), with how many images each."""
    sources = Counter(
        pair.image_source.strip() or NO_IMAGE_SOURCE for pair in {p.image_id: p for p in data.pairs}.values()
    )
    return [{"source": source, "images": count} for source, count in sorted(sources.items())]


def control_agreement_section(data: ExportData) -> dict:
    """Agreement with the experts on the control pairs: overall and per rater (pseudonyms), as
    the rubric's mean (exact 2, adjacent 1, otherwise 0) and the share of exact ratings."""

    def summary(ratings: list) -> dict:
        n = len(ratings)
        return {
            "ratings": n,
            "mean_agreement": sum(r.agreement for r in ratings) / n if n else None,
            "exact_share": sum(r.agreement == 2 for r in ratings) / n if n else None,
        }

    by_rater: dict[str, list] = {}
    for rating in data.control_ratings:
        by_rater.setdefault(rating.rater, []).append(rating)
    return {
        **summary(data.control_ratings),
        "pairs": len({rating.pair_id for rating in data.control_ratings}),
        "by_rater": [{"rater": rater, **summary(by_rater[rater])} for rater in sorted(by_rater)],
    }


def _aggregate(data: ExportData) -> aggregation.Aggregate | None:
    if not data.ratings:
        return None
    return aggregation.dawid_skene((rating.pair_id, rating.rater, rating.value) for rating in data.ratings)


def _rater_quality_section(data: ExportData, aggregate: aggregation.Aggregate | None) -> dict:
    """statistics.json's ``rater_quality``: each exported rater's Dawid-Skene expected accuracy."""
    counts: dict[str, int] = {}
    for rating in data.ratings:
        counts[rating.rater] = counts.get(rating.rater, 0) + 1
    quality = aggregate.rater_quality if aggregate is not None else {}
    return {
        "method": aggregation.METHOD,
        "columns": ["ds_label", "ds_posterior"],
        "raters": [
            {"rater": rater, "ratings": counts[rater], "quality": quality.get(rater)} for rater in sorted(counts)
        ],
    }


def _pair_table(
    data: ExportData, splits: dict[int, str], summaries: dict[int, tuple], aggregate: aggregation.Aggregate | None
) -> tuple[list[tuple[str, str]], list[tuple]]:
    columns = list(PAIR_COLUMNS)
    for column in data.model_columns:
        columns += [
            (f"score__{column.stem}__raw", "float", RAW_SCORE_DIGITS),
            (f"score__{column.stem}__calibrated", "float", CALIBRATED_DIGITS),
        ]
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
            pair.image_source,
            pair.caption,
            pair.source,
            splits[pair.id],
            len(pair.ratings),
            mean,
            consensus,
            sd,
            pair.label,
            pair.label_probability,
            aggregate.labels.get(pair.id) if aggregate else None,
            aggregate.posterior.get(pair.id) if aggregate else None,
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
        "dataset": DATASET_NAME,
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
    top = [*BUNDLE_FILES, *(f"{stem}.{fmt}" for stem in TABLES for fmt in FORMATS)]
    names = [name for name in top if (out / name).is_file()]
    for folder in BUNDLE_FOLDERS:
        if (out / folder).is_dir():
            names += [f"{folder}/{path.as_posix()}" for path in folder_files(out / folder)]
    return sorted(names)


def _bundle_clear(out: Path) -> None:
    """Remove what an earlier export wrote here, so no stale table or image is left beside the new ones."""
    for name in _bundle_names(out):
        if "/" not in name:
            (out / name).unlink()
    for folder in BUNDLE_FOLDERS:
        if (out / folder).is_dir():
            shutil.rmtree(out / folder)


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
