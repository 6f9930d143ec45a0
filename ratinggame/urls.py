from django.conf import settings
from django.contrib import admin
from django.urls import include, path, register_converter
from django.views.generic import RedirectView

from ratinggame import health, import_views, login_throttle, play, report_views, views
from ratinggame.pairs import media


class StageConverter:
    """The three rating screens share one view: /play/tutorial/, /play/probation/, /play/game/."""

    regex = "tutorial|probation|game"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(StageConverter, "stage")

# A database that does not answer is a 503 with Retry-After, not a 500 (ratinggame.unavailable).
handler500 = "ratinggame.unavailable.server_error"

urlpatterns = [
    path("", views.home, name="home"),
    # The most requested routes first (a pattern is tried in order): the API's (its game routes
    # lead) and the rating page's one request.
    path("api/", include("ratinggame.api.urls")),
    path("play/submit/", play.submit, name="play_submit"),
    path("", include("annotators.urls")),
    path("play/<stage:stage>/", views.rate, name="rate"),
    path("play/<stage:stage>/<int:assignment_id>/", views.rate, name="rate_pair"),
    path("play/feedback/<int:assignment_id>/", views.feedback, name="feedback"),
    path("play/feedback/<int:assignment_id>/dispute/", views.dispute, name="dispute"),
    path("play/report/", report_views.report, name="pair_report"),
    path("play/skip/", views.skip, name="pair_skip"),
    path("play/finish/", views.session_finish, name="session_finish"),
    path("me/delete/", views.data_delete, name="data_delete"),
    # The log-in doors go through the log-in limiter (before the routes they shadow).
    path("accounts/login/", login_throttle.ThrottledLoginView.as_view(), name="login"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("admin/login/", login_throttle.admin_login, name="admin_login_throttled"),
    path("admin/", admin.site.urls),
    # Imports from the browser (before the rest of /research/, which belongs to scoring).
    path("research/import/", import_views.import_page, name="pairs_import"),
    path("research/import/<int:import_id>/", import_views.import_job, name="pairs_import_job"),
    path("research/import/<int:import_id>/status/", import_views.import_job_status, name="pairs_import_status"),
    path("research/", include("scoring.urls")),
    # Staff pages of the game (before the rest of /staff/, which belongs to annotators.staff).
    path("staff/reports/", report_views.queue, name="pair_reports"),
    path("staff/reports/<int:pair_id>/resolve/", report_views.resolve, name="pair_reports_resolve"),
    # The study settings moved to the research pages (researchers run the study); old links follow.
    path("staff/study/", RedirectView.as_view(pattern_name="annotators:study_settings", permanent=True)),
    path("staff/", include("annotators.staff.urls")),
    path("healthz", health.healthz, name="healthz"),
    # Pair images, in production too (ratinggame.pairs.media); only images, never exports.
    path(f"{settings.MEDIA_URL.strip('/')}/<path:path>", media.image_file, name="media_image"),
]
