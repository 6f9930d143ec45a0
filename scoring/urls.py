from django.urls import path

from scoring import views

app_name = "scoring"
urlpatterns = [
    path("", views.research_index, name="research"),
    path("exports/", views.export_start, name="export-start"),
    path("exports/<int:job_id>/status/", views.export_status, name="export-status"),
    path("exports/<int:job_id>/download/", views.export_download, name="export-download"),
]
