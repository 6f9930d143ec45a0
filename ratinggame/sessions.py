"""The session engine (``SESSION_ENGINE``): Django's database sessions, each row naming its user.

Django documents this extension ("Extending database-backed session engines"): the store writes
``ratinggame.models.Session``, with the user the session is signed in as (Django's own
``_auth_user_id``, kept in the session data) also in a column, so that one query can read the
session with its user and their rater profile (``ratinggame.game.sql.rater_by_session``).
Everything else (signing, expiry, ``cycle_key`` at log-in, ``flush`` at log-out) is Django's.
"""

from django.apps import apps
from django.contrib.auth import SESSION_KEY
from django.contrib.sessions.backends.db import SessionStore as DatabaseSessionStore


class SessionStore(DatabaseSessionStore):
    @classmethod
    def get_model_class(cls):
        # By name: the model names this engine as its store, and a module import each way is a cycle.
        return apps.get_model("ratinggame", "Session")

    def create_model_instance(self, data: dict):
        instance = super().create_model_instance(data)
        try:
            instance.user_id = int(data.get(SESSION_KEY))
        except (TypeError, ValueError):
            instance.user_id = None
        return instance
