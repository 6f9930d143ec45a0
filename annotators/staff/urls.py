"""Staff pages, mounted at /staff/ (ratinggame.urls). Every URL is staff-only (annotators.staff.views)."""

from django.urls import path

from annotators.staff import views

app_name = "staff"

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("raters/<int:profile_id>/", views.rater_detail, name="rater"),
    path("raters/<int:profile_id>/suspend/", views.rater_action, {"action": "suspend"}, name="rater_suspend"),
    path("raters/<int:profile_id>/reinstate/", views.rater_action, {"action": "reinstate"}, name="rater_reinstate"),
    path("raters/<int:profile_id>/probation/", views.rater_action, {"action": "probation"}, name="rater_probation"),
    path("disputes/", views.dispute_queue, name="disputes"),
    path("disputes/<int:dispute_id>/resolve/", views.dispute_resolve, name="dispute_resolve"),
    path("competency/refresh/", views.competency_refresh, name="competency_refresh"),
]
