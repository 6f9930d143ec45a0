from django.urls import path

from annotators import views
from annotators.study import bonus_views
from annotators.study import views as study_views

app_name = "annotators"

urlpatterns = [
    path("accounts/signup/", views.signup, name="signup"),
    path("play/", views.play, name="play"),
    path("play/consent/", views.consent, name="consent"),
    path("play/introduction/", views.intro, name="intro"),
    path("play/suspended/", views.suspended, name="suspended"),
    path("leaderboard/", views.leaderboard, name="leaderboard"),
    path("me/", views.me, name="me"),
    path("study/enter/", study_views.enter, name="study_enter"),
    path("study/complete/", study_views.complete, name="study_complete"),
    # Before the rest of /research/ (scoring's).
    path("research/study/", study_views.settings_page, name="study_settings"),
    path("research/pay/", study_views.pay_page, name="pay_report"),
    path("research/pay/bonus/", bonus_views.bonus_draft, name="bonus_draft"),
    path("research/pay/bonus/<int:batch_id>/", bonus_views.bonus_batch, name="bonus_batch"),
    path("research/pay/approve/", bonus_views.approve, name="prolific_approve"),
]
