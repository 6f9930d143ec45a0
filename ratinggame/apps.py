from django.apps import AppConfig


class RatingGameConfig(AppConfig):
    name = "ratinggame"
    verbose_name = "Rating game"

    def ready(self) -> None:
        # Connects the log-in limiter to Django's log-in signals.
        from ratinggame import login_throttle  # noqa: F401
