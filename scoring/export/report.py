"""report.html and datasheet.md of an export, rendered from its statistics (templates/scoring/export/)."""

from django.conf import settings
from django.template.loader import render_to_string
from django.utils.safestring import mark_safe

from annotators import journey
from annotators.competency.analysis import PAPER_COEF_PER_10_PERCENT, PAPER_SE_PER_10_PERCENT
from annotators.competency.regression import NO_REGRESSION_NOTE
from annotators.scale import LEVELS
from ratinggame.models import MAX_HUMAN_RATINGS, MIN_HUMAN_RATINGS, Pool
from scoring import bootstrap
from scoring.export.figures import distribution_bars_svg, source_shares_svg
from scoring.export.stats import AGREEMENT_ROWS, ALL_RATINGS_ROWS, PAPER_TABLE3


def _figure(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _correlation_row(row: dict) -> dict:
    """A metric correlation with its τ_c and interval as text."""
    return {**row, "tau_text": _figure(row["tau_c"]), "interval": _interval(row)}


def _interval(found: dict | None, digits: int = 1) -> str:
    found = found or {}
    low, high = found.get("ci_low"), found.get("ci_high")
    return "—" if low is None or high is None else f"[{low:.{digits}f}, {high:.{digits}f}]"


def _paper_inside(regression: dict, paper: float) -> str:
    low, high = regression.get("ci_low_per_10_percent"), regression.get("ci_high_per_10_percent")
    if low is None or high is None:
        return "—"
    return "yes" if low <= paper <= high else "no"


def _inside(comparison: dict, statistic: str) -> str:
    inside = (comparison.get("VICR") or {}).get(statistic, {}).get("inside")
    return "—" if inside is None else ("yes" if inside else "no")


def _source_rows(statistics: dict) -> list[dict]:
    """One row per caption source: its main agreement figures with their intervals."""
    rows = []
    for source, block in (statistics.get("agreement_by_source") or {}).items():
        virtual = block.get("virtual_raters") or {}
        everything = block.get("all_ratings") or {}
        cells = []
        for found in (virtual.get("tau_X_YZ"), virtual.get("kendall_w"), virtual.get("fleiss_kappa")):
            cells.append(f"{_figure((found or {}).get('mean'))} {_interval(found)}")
        for found in (everything.get("krippendorff_alpha_ordinal"), everything.get("icc1")):
            cells.append(f"{_figure((found or {}).get('value'))} {_interval(found)}")
        rows.append({"source": source, "pairs": block.get("pairs"), "too_few": block.get("too_few"), "cells": cells})
    return rows


def _p_value(p: float | None) -> str:
    if p is None:
        return "—"
    return "< 0.0001" if p < 1e-4 else f"{p:.4f}"


def _competency(statistics: dict) -> dict:
    """The report's view of statistics["competency"]: the regression formatted, rater rows."""
    competency = statistics.get("competency") or {"available": False, "note": ""}
    regression = competency.get("regression") or {}
    paper = competency.get("paper_regression") or {}
    coef = regression.get("coef_per_10_percent")
    row = None
    if coef is not None:
        p = _p_value(regression.get("p_value"))
        row = {
            "coef": f"{coef:+.3f}",
            "se": _figure(regression.get("se_per_10_percent"), 3),
            "p": p,
            "p_text": f"p {p}" if p.startswith("<") else f"p = {p}",
            "n": regression.get("n"),
            "too_few": bool(regression.get("too_few")),
            "min_raters": regression.get("min_raters"),
            "interval": _interval(
                {
                    "ci_low": regression.get("ci_low_per_10_percent"),
                    "ci_high": regression.get("ci_high_per_10_percent"),
                },
                digits=3,
            ),
            "paper_inside": _paper_inside(regression, paper.get("coef_per_10_percent", PAPER_COEF_PER_10_PERCENT)),
        }
    details = competency.get("details") or {}
    return {
        **competency,
        "not_converged": details.get("converged") is False,
        "regression_not_converged": regression.get("converged") is False,
        "regression_note": details.get("regression_note") or NO_REGRESSION_NOTE,
        "regression_row": row,
        "paper_coef": f"{paper.get('coef_per_10_percent', PAPER_COEF_PER_10_PERCENT):+.2f}",
        "paper_se": f"{paper.get('se_per_10_percent', PAPER_SE_PER_10_PERCENT):.2f}",
        "raters_rows": [
            {"rater": rater["rater"], "competency": _figure(rater["competency"], 2), "se": _figure(rater["se"], 2)}
            for rater in competency.get("raters", [])
        ],
    }


def _context(statistics: dict) -> dict:
    agreement = statistics.get("agreement") or {}
    comparison = statistics.get("paper_comparison") or {}
    rows = []
    for key, label in AGREEMENT_ROWS:
        found = agreement.get(key) or {}
        rows.append(
            {
                "label": label,
                "mean": _figure(found.get("mean")),
                "interval": _interval(found),
                "sd": "" if found.get("sd") is None else f"{found['sd']:.2f}",
                "vicr": _figure(PAPER_TABLE3["VICR"].get(key)),
                "vicr_inside": _inside(comparison, key) if key in PAPER_TABLE3["VICR"] else "",
                "flickr": _figure(PAPER_TABLE3["Flickr8k-Expert"].get(key)),
            }
        )
    everything = statistics.get("agreement_all_ratings") or {}
    all_rows = []
    for key, label in ALL_RATINGS_ROWS:
        found = everything.get(key) or {}
        all_rows.append({"label": label, "value": _figure(found.get("value")), "interval": _interval(found)})
    distribution = statistics["rating_distribution"]
    total = sum(distribution.values())
    sources = [
        {"source": source, "counts": list(counts.values()), "total": sum(counts.values())}
        for source, counts in statistics["source_distributions"].items()
    ]
    correlations = [_correlation_row(row) for row in statistics["metric_correlations"]]
    source_correlations = [
        _correlation_row({**row, "source": source})
        for source, rows in (statistics.get("metric_correlations_by_source") or {}).items()
        for row in rows
    ]
    game = settings.RATINGGAME
    source_agreement = _source_rows(statistics)
    return {
        "statistics": statistics,
        "counts": statistics["counts"],
        "parameters": statistics["parameters"],
        "agreement_rows": rows,
        "all_ratings_rows": all_rows,
        "all_ratings": everything,
        "interval_method": bootstrap.METHOD_WORDS,
        "source_agreement_rows": source_agreement,
        "source_agreement_too_few": any(row["too_few"] for row in source_agreement),
        "agreement_too_few": statistics.get("agreement_too_few"),
        "minimums": statistics.get("minimums") or {},
        "agreement": agreement,
        "agreement_note": statistics.get("agreement_note", ""),
        "distribution_rows": [
            {"level": level, "count": count, "share": f"{count / total:.1%}" if total else "—"}
            for level, count in distribution.items()
        ],
        "source_rows": sources,
        "correlations": correlations,
        "source_correlations": source_correlations,
        "distribution_svg": mark_safe(  # noqa: S308 - figures.py escapes every text
            distribution_bars_svg(distribution, figure_id="fig-distribution", title="Rating distribution")
        ),
        "sources_svg": mark_safe(  # noqa: S308 - figures.py escapes every text
            source_shares_svg(
                statistics["source_distributions"], figure_id="fig-sources", title="Rating distribution per source"
            )
        ),
        "competency": _competency(statistics),
        "rater_quality": statistics.get("rater_quality") or {},
        "scale_levels": LEVELS,
        "min_seconds": journey.min_seconds(Pool.GAME),
        "rules": journey.rules(),
        "min_ratings": MIN_HUMAN_RATINGS,
        "max_ratings": MAX_HUMAN_RATINGS,
        "priming_model": ", ".join(filter(None, (game.get("PRIMING_MODEL"), game.get("PRIMING_FLEUR_MODEL")))),
    }


def report_render(statistics: dict, *, wright_map_svg: str = "") -> str:
    """The self-contained HTML report: tables, inline SVG figures, the paper's Table 3 beside ours.

    ``wright_map_svg``: the competency analysis's Wright map (``annotators.competency.wright_map``, built
    from escaped text), shown inline when given.
    """
    context = _context(statistics)
    context["wright_map_svg"] = mark_safe(wright_map_svg)  # noqa: S308 - escaped in annotators.competency.wright_map
    return render_to_string("scoring/export/report.html", context)


def datasheet_render(statistics: dict) -> str:
    """datasheet.md: how the data was collected, what the files hold, and what was left out."""
    return render_to_string("scoring/export/datasheet.md", _context(statistics))


def dataset_card_render(
    statistics: dict,
    *,
    front_matter: str,
    pretty_name: str,
    code_version: str,
    rounding: list[tuple[int, list[str]]],
) -> str:
    """README.md: the Hugging Face dataset card (``scoring.export.card`` writes its YAML header).
    ``rounding``: the decimals of the text formats' float columns (``card.rounding_groups``)."""
    context = _context(statistics)
    context.update(
        rounding=rounding,
        front_matter=front_matter,
        code_version=code_version,
        pretty_name=pretty_name,
        license=settings.RATINGGAME.get("DATASET_LICENSE") or "",
        image_sources=statistics.get("image_sources") or [],
    )
    return render_to_string("scoring/export/README.md", context)
