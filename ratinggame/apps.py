from django.apps import AppConfig


class RatingGameConfig(AppConfig):
    name = "ratinggame"
    verbose_name = "Rating game"

    def ready(self) -> None:
        from django.db.backends.signals import connection_created

        # Connects the log-in limiter to Django's log-in signals.
        from ratinggame import login_throttle  # noqa: F401
        from ratinggame.game.prepared import generic_plans

        connection_created.connect(generic_plans, dispatch_uid="ratinggame.generic_plans")
