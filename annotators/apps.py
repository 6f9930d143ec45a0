from django.apps import AppConfig


class AnnotatorsConfig(AppConfig):
    name = "annotators"
    verbose_name = "Annotators"
