"""The crowd simulator's report: counts, errors, throughput, latencies, and how well the game
recovers the raters' true competencies.

Two recoveries are measured with Spearman's rank correlation (scipy.stats.spearmanr):

- the rater's game score (as the server reported it in the last game feedback; 0 for a rater
  who never reached the game or failed its qualification window) against its true competency;
- its Partial Credit Model competency (annotators.competency.pcm.fit_pcm, the VICR paper's section 4)
  against its true competency, fitted here on the simulator's own acknowledged game ratings,
  each scored against the pair's simulated true quality with the paper's rubric: exact
  agreement 2, adjacent 1, else 0. Raters without a game rating have no PCM measure and are
  left out of that correlation.

No Django import: plain values in, a JSON-ready dict out.
"""

import math
import warnings

import numpy as np
from scipy import stats

from annotators.competency.pcm import fit_pcm, rubric_scores


def spearman(x: list[float], y: list[float]) -> dict:
    """{"rho", "p", "n"}; rho and p are None with fewer than 3 points or a constant input."""
    pairs = [(a, b) for a, b in zip(x, y, strict=True) if a is not None and b is not None and math.isfinite(a)]
    n = len(pairs)
    if n < 3 or len({a for a, _ in pairs}) < 2 or len({b for _, b in pairs}) < 2:
        return {"rho": None, "p": None, "n": n}
    result = stats.spearmanr([a for a, _ in pairs], [b for _, b in pairs])
    return {"rho": float(result.statistic), "p": float(result.pvalue), "n": n}


def latency_summary(seconds: list[float]) -> dict:
    """Count, p50, p99 and mean of request latencies, in milliseconds (numpy's linear percentiles)."""
    if not seconds:
        return {"n": 0, "p50_ms": None, "p99_ms": None, "mean_ms": None}
    values = np.asarray(seconds) * 1000.0
    return {
        "n": len(seconds),
        "p50_ms": round(float(np.percentile(values, 50)), 2),
        "p99_ms": round(float(np.percentile(values, 99)), 2),
        "mean_ms": round(float(values.mean()), 2),
    }


def pcm_abilities(raters: int, game_ratings: list[tuple[int, int, int, int]]) -> tuple[list[float | None], bool]:
    """PCM competency (logits) per rater from (rater, pair id, value, true quality) game ratings.

    Returns (abilities with None for raters without a rating or when no fit is possible, converged).
    """
    if not game_ratings:
        return [None] * raters, False
    pair_ids = sorted({pair for _, pair, _, _ in game_ratings})
    column = {pair: index for index, pair in enumerate(pair_ids)}
    values = np.full((raters, len(pair_ids)), np.nan)
    truths = np.full((raters, len(pair_ids)), np.nan)
    for rater, pair, value, truth in game_ratings:
        values[rater, column[pair]] = value
        truths[rater, column[pair]] = truth
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            result = fit_pcm(rubric_scores(values, truths))
    except ValueError:  # fewer than two rubric categories observed: no model to fit
        return [None] * raters, False
    abilities = [None if math.isnan(a) else float(a) for a in result.abilities]
    return abilities, bool(result.converged)


def build_report(*, config, share: int, truth_source: str, outcomes: list, recorder, timings: dict) -> dict:
    """The report of one run, JSON-ready (see the module docstring)."""
    acks = recorder.acks
    by_stage: dict[str, int] = {}
    for ack in acks:
        by_stage[ack.stage] = by_stage.get(ack.stage, 0) + 1
    game = [(a.rater, a.pair_id, a.value, a.truth) for a in acks if a.stage == "game"]
    abilities, converged = pcm_abilities(len(outcomes), game)
    # The correlations are about honest raters: the others' competency is not what they rate with.
    honest = [o.rater.kind == "honest" for o in outcomes]
    competency = [o.rater.competency if h else None for o, h in zip(outcomes, honest, strict=True)]
    scores = [float(o.game_score) if h else None for o, h in zip(outcomes, honest, strict=True)]
    play_seconds = timings.get("play_done", 0.0) - timings.get("signup_done", 0.0)
    ended: dict[str, int] = {}
    for outcome in outcomes:
        ended[outcome.ended] = ended.get(outcome.ended, 0) + 1
    return {
        "server": config.server,
        "seed": config.seed,
        "raters": config.raters,
        "pairs": config.pairs,
        "game_share_per_rater": share,
        "truth_source": truth_source,
        "ratings_acknowledged": len(acks),
        "ratings_by_stage": by_stage,
        "errors": dict(sorted(recorder.errors.items())),
        "errors_total": sum(recorder.errors.values()),
        "gave_up": dict(sorted(recorder.gave_up.items())),
        "raters_ended": ended,
        "wall_seconds": round(timings.get("play_done", 0.0), 3),
        "setup_seconds": round(timings.get("setup_done", 0.0), 3),
        "signup_seconds": round(timings.get("signup_done", 0.0) - timings.get("setup_done", 0.0), 3),
        "play_seconds": round(play_seconds, 3),
        "throughput_ratings_per_s": round(len(acks) / play_seconds, 2) if play_seconds > 0 else None,
        "latency": {kind: latency_summary(values) for kind, values in sorted(recorder.latencies.items())},
        "spearman_game_score": spearman(scores, competency),
        "spearman_pcm": spearman(
            [a if a is not None and h else math.nan for a, h in zip(abilities, honest, strict=True)], competency
        ),
        "pcm_converged": converged,
        "rater_details": [
            {
                "index": o.rater.index,
                "username": o.username,
                "user_id": o.user_id,
                "kind": o.rater.kind,
                "competency": round(o.rater.competency, 4),
                "game_ratings": o.game_ratings,
                "scored_ratings": o.scored_ratings,
                "game_score": o.game_score,
                "pcm_competency": None if ability is None else round(ability, 4),
                "probation_rounds_failed": o.probation_failed,
                "windows_failed": o.windows_failed,
                "drifts": o.drifts,
                "last_stage": o.last_stage,
                "ended": o.ended,
            }
            for o, ability in zip(outcomes, abilities, strict=True)
        ],
    }


def _rho(result: dict) -> str:
    if result["rho"] is None:
        return f"n/a (n = {result['n']})"
    return f"{result['rho']:.3f} (p = {result['p']:.2g}, n = {result['n']})"


def format_report(report: dict) -> str:
    """The report as text for a person."""
    lines = [
        f"server: {report['server']}   seed: {report['seed']}   truth: {report['truth_source']}",
        f"raters: {report['raters']}   game pairs: {report['pairs']}   "
        f"game ratings per rater: {report['game_share_per_rater']}",
        f"ratings acknowledged: {report['ratings_acknowledged']}   by stage: {report['ratings_by_stage']}",
        f"errors: {report['errors_total']} {report['errors'] or ''}".rstrip(),
        f"gave up: {report['gave_up'] or 'none'}",
        f"raters ended: {report['raters_ended']}",
        f"wall time: {report['wall_seconds']:.2f} s (setup {report['setup_seconds']:.2f} s, "
        f"sign-up {report['signup_seconds']:.2f} s, play {report['play_seconds']:.2f} s)",
        f"throughput: {report['throughput_ratings_per_s']} ratings/s (acknowledged / play time)",
    ]
    for kind, summary in report["latency"].items():
        if summary["n"]:
            lines.append(
                f"latency {kind:>8}: n = {summary['n']:>6}  p50 = {summary['p50_ms']:8.2f} ms  "
                f"p99 = {summary['p99_ms']:8.2f} ms"
            )
    lines += [
        f"Spearman rho, game score vs true competency:     {_rho(report['spearman_game_score'])}",
        f"Spearman rho, PCM competency vs true competency: {_rho(report['spearman_pcm'])}",
        "",
        f"{'rater':>5} {'competency':>10} {'game':>5} {'score':>6} {'PCM':>8} {'prob.fail':>9} {'win.fail':>8} "
        f"{'drift':>5}  ended",
    ]
    for rater in sorted(report["rater_details"], key=lambda r: (r["kind"] != "honest", r["competency"])):
        pcm = "-" if rater["pcm_competency"] is None else f"{rater['pcm_competency']:.2f}"
        kind = "" if rater["kind"] == "honest" else f" ({rater['kind']})"
        lines.append(
            f"{rater['index']:>5} {rater['competency']:>10.3f} {rater['game_ratings']:>5} {rater['game_score']:>6} "
            f"{pcm:>8} {rater['probation_rounds_failed']:>9} {rater['windows_failed']:>8} {rater['drifts']:>5}  "
            f"{rater['ended']}{kind}"
        )
    return "\n".join(lines)
