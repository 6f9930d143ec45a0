"""The API's routes, included at /api/ by ratinggame.urls: a module per resource (``ratinggame.api``)."""

from csp.constants import UNSAFE_INLINE
from csp.decorators import csp_update
from django.urls import path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerSplitView

from ratinggame.api import auth, exports, game, pairs, progress, raters, ratings, study
from ratinggame.api.errors import api_not_found

urlpatterns = [
    # The game (annotators), first: its rating and next pair are the most requested routes (a
    # pattern is tried in order).
    path("game/submit", game.SubmitRatingView.as_view(), name="api_game_submit"),
    path("game/next", game.NextPairView.as_view(), name="api_game_next"),
    path("game/step", game.StepView.as_view(), name="api_game_step"),
    path("game/consent", game.ConsentView.as_view(), name="api_game_consent"),
    path("game/skip", game.SkipView.as_view(), name="api_game_skip"),
    path("game/feedback/<int:assignment_id>", game.FeedbackView.as_view(), name="api_game_feedback"),
    # Schema and its documentation pages (assets from drf-spectacular-sidecar, no CDN), under the
    # site's Content-Security-Policy: Swagger UI's start script is served as a file of its own
    # (the split view); Redoc builds its styles and a search worker at run time, so its page
    # alone allows inline styles and blob: workers.
    path("schema/", SpectacularAPIView.as_view(), name="api_schema"),
    path(
        "docs/",
        SpectacularSwaggerSplitView.as_view(url_name="api_schema", template_name="api/swagger_ui.html"),
        name="api_docs",
    ),
    path(
        "redoc/",
        csp_update({"style-src": [UNSAFE_INLINE], "worker-src": ["blob:"]})(
            SpectacularRedocView.as_view(url_name="api_schema", template_name="api/redoc.html")
        ),
        name="api_redoc",
    ),
    # Accounts.
    path("auth/signup", auth.SignupView.as_view(), name="api_signup"),
    path("auth/token", auth.TokenView.as_view(), name="api_token"),
    # Research (researchers).
    path("pairs/", pairs.PairList.as_view(), name="api_pairs"),
    path("pairs/import", pairs.ManifestUpload.as_view(), name="api_pairs_import"),
    path("pairs/<int:pk>/", pairs.PairDetail.as_view(), name="api_pair"),
    path("imports/<int:pk>/", pairs.ImportJobDetail.as_view(), name="api_import"),
    path("ratings/", ratings.RatingList.as_view(), name="api_ratings"),
    path("ratings/<int:pk>/", ratings.RatingDetail.as_view(), name="api_rating"),
    path("exports/", exports.ExportJobList.as_view(), name="api_exports"),
    path("exports/<int:pk>/", exports.ExportJobDetail.as_view(), name="api_export"),
    path("exports/<int:pk>/download", exports.ExportJobDownload.as_view(), name="api_export_download"),
    path("progress/", progress.ProgressView.as_view(), name="api_progress"),
    path("study/pay", study.PayReportView.as_view(), name="api_pay_report"),
    path("study/session", study.SessionView.as_view(), name="api_study_session"),
    path("study/session/finish", study.SessionFinishView.as_view(), name="api_study_session_finish"),
    # Rater statistics and actions (admins).
    path("admin/raters/", raters.RaterList.as_view(), name="api_raters"),
    path("admin/raters/<int:profile_id>/", raters.RaterDetail.as_view(), name="api_rater"),
    path(
        "admin/raters/<int:profile_id>/suspend",
        raters.RaterActionView.as_view(rater_action="suspend"),
        name="api_rater_suspend",
    ),
    path(
        "admin/raters/<int:profile_id>/reinstate",
        raters.RaterActionView.as_view(rater_action="reinstate"),
        name="api_rater_reinstate",
    ),
    path(
        "admin/raters/<int:profile_id>/probation",
        raters.RaterActionView.as_view(rater_action="probation"),
        name="api_rater_probation",
    ),
    path("admin/actions/", raters.ActionLog.as_view(), name="api_actions"),
    # Anything else under /api/: a JSON 404 in the API's error shape.
    re_path(r"^(?P<path>.*)$", api_not_found, name="api_not_found"),
]
