"""The latent regression of the VICR paper (section 4): competency on tutorial score. Pure module.

The paper reports +0.017 logits per 1% of tutorial ("training") score, SE 0.003, from 132
raters (+0.17 per 10%). SPEC section 6: the competency that enters the regression is fitted
on game ratings only (tutorial items inside it would make the regression circular).
"""

import numpy as np
import statsmodels.api as sm

from annotators.competency.pcm import fit_pcm

# The latent regression's documented minimums. A rater with fewer game responses than this has
# a competency SE near 0.4 logits or more (about 1/sqrt(20 x 0.3)): it would add noise, not
# information. With fewer raters than REGRESSION_MIN_RATERS the slope is shown as "too few to
# interpret" (the audit saw +0.78 per 10% from 8 raters, against the paper's +0.17 from 132).
REGRESSION_MIN_RESPONSES = 20
REGRESSION_MIN_RATERS = 20
# Fewer raters than this and no slope is fitted at all.
REGRESSION_MIN_FIT = 3
# Why the regression was not estimated, for an analysis stored without its own note.
NO_REGRESSION_NOTE = (
    f"fewer than {REGRESSION_MIN_FIT} raters with a tutorial score and at least {REGRESSION_MIN_RESPONSES} "
    "scored game ratings"
)


def _raters(n: int) -> str:
    return f"{n} rater{'' if n == 1 else 's'}"


def latent_regression(
    abilities: np.ndarray, training_scores_percent: np.ndarray, ability_se: np.ndarray | None = None
) -> dict:
    """Regress rater competency (logits) on tutorial score (percent, 0-100).

    The paper fits a latent regression (population model) in ConQuest and reports 0.017
    logits per 1% (SE 0.003), i.e. 0.17 per 10%. Here, a two-step approximation on the point
    estimates: ordinary least squares (statsmodels OLS), or, when ability_se is given,
    weighted least squares with weights 1 / (tau^2 + se^2): each competency is the true one
    plus its measurement error (se) around a population spread tau^2 that no rater's
    precision removes, so 1/se^2 alone would hand the most active raters nearly all the
    weight. tau^2 is the moment estimate max(0, var(OLS residuals) - mean(se^2))
    (DerSimonian & Laird 1986, "Meta-analysis in clinical trials", as in meta-regression).
    Raters with a NaN ability, standard error or score are left out. ``too_few`` is True below
    REGRESSION_MIN_RATERS raters: the slope is then not to be interpreted.
    """
    y = np.asarray(abilities, dtype=float)
    score = np.asarray(training_scores_percent, dtype=float)
    keep = np.isfinite(y) & np.isfinite(score)
    se = None
    if ability_se is not None:
        se = np.asarray(ability_se, dtype=float)
        keep &= np.isfinite(se) & (se > 0)
    if keep.sum() < REGRESSION_MIN_FIT:
        raise ValueError(
            f"the regression needs at least {REGRESSION_MIN_FIT} raters with a competency and a tutorial score"
        )
    design = sm.add_constant(score[keep], has_constant="add")
    fit = sm.OLS(y[keep], design).fit()
    method, tau_squared = "OLS", None
    if se is not None:
        tau_squared = max(0.0, float(np.var(fit.resid, ddof=2)) - float(np.mean(se[keep] ** 2)))
        fit = sm.WLS(y[keep], design, weights=1 / (tau_squared + se[keep] ** 2)).fit()
        method = "WLS"
    coef, coef_se = float(fit.params[1]), float(fit.bse[1])
    low, high = (float(v) for v in np.asarray(fit.conf_int(alpha=0.05))[1])
    return {
        "method": method,
        "n": int(fit.nobs),
        "too_few": int(fit.nobs) < REGRESSION_MIN_RATERS,
        "min_raters": REGRESSION_MIN_RATERS,
        "tau_squared": tau_squared,
        "intercept": float(fit.params[0]),
        "intercept_se": float(fit.bse[0]),
        "coef_per_percent": coef,
        "se_per_percent": coef_se,
        "coef_per_10_percent": 10 * coef,
        "se_per_10_percent": 10 * coef_se,
        "ci_low_per_10_percent": 10 * low,
        "ci_high_per_10_percent": 10 * high,
        "p_value": float(fit.pvalues[1]),
        "r_squared": float(fit.rsquared),
    }


def game_competency_regression(
    responses: np.ndarray,
    is_game_item: np.ndarray,
    training_scores_percent: np.ndarray,
    *,
    min_responses: int = REGRESSION_MIN_RESPONSES,
    scale_of: np.ndarray | None = None,
) -> dict:
    """The latent regression of tutorial score on competency fitted on game pairs only (SPEC 6).

    The tutorial score is the sum of the tutorial pairs' rubric scores, so a competency fitted
    with the tutorial pairs in it contains the tutorial score, and the regression finds a slope
    where there is none (+0.0136 per 1% on data with no link at all, in the audit). The paper
    validated training against later performance: here the PCM is refitted on the game
    columns of ``responses`` (``is_game_item``), raters with fewer than ``min_responses`` game
    responses are left out, and the rest are weighted by their precision
    (:func:`latent_regression`). Adds ``converged`` (of this fit), ``min_responses``,
    ``raters_too_few_responses`` and ``raters_without_tutorial_score``. Raises ValueError when
    the game responses cannot be fitted or fewer than 3 raters qualify.

    ``scale_of``: abilities of another fit of the same raters (the whole analysis, whose Wright
    map shows the regression). Each fit fixes its own origin, so the game-only abilities are
    moved onto that fit's by their mean difference over the raters in both: the intercept is
    then read on that map; the slope and every standard error stay as they are.
    """
    game = np.asarray(responses, dtype=float)[:, np.asarray(is_game_item, dtype=bool)]
    score = np.asarray(training_scores_percent, dtype=float)
    counts = (~np.isnan(game)).sum(axis=1)
    rated = counts > 0
    if not rated.any():
        raise ValueError("no game ratings with a reference yet")
    fit = fit_pcm(game[rated])
    abilities = np.full(score.size, np.nan)
    ability_se = np.full(score.size, np.nan)
    abilities[rated], ability_se[rated] = fit.abilities, fit.ability_se
    if scale_of is not None:
        both = np.isfinite(abilities) & np.isfinite(scale_of)
        if both.any():
            abilities = abilities + float(np.mean(scale_of[both] - abilities[both]))
    enough = counts >= min_responses
    qualified = enough & np.isfinite(abilities) & np.isfinite(ability_se) & (ability_se > 0) & np.isfinite(score)
    if qualified.sum() < REGRESSION_MIN_FIT:
        # Say which requirement the raters miss: most often too few scored game ratings each.
        short = int(np.sum(rated & ~enough))
        without_score = int(np.sum(rated & enough & ~np.isfinite(score)))
        raise ValueError(
            f"{_raters(int(qualified.sum()))} with a tutorial score and at least {min_responses} scored game "
            f"ratings (game ratings with a consensus to score against), {REGRESSION_MIN_FIT} needed; "
            f"{_raters(short)} {'has' if short == 1 else 'have'} fewer scored game ratings"
            + (f", {_raters(without_score)} no tutorial score" if without_score else "")
        )
    regression = latent_regression(np.where(enough, abilities, np.nan), score, ability_se=ability_se)
    regression.update(
        converged=bool(fit.converged),
        min_responses=int(min_responses),
        raters_too_few_responses=int(np.sum(rated & ~enough)),
        raters_without_tutorial_score=int(np.sum(rated & enough & ~np.isfinite(score))),
    )
    return regression
