"""Django's messages (``django.contrib.messages``) with a request's storage made when it is first used.

Django's ``MessageMiddleware`` makes every request's message storage before the view runs (the
fallback storage: a cookie storage with its signer, and a session storage) and asks it after the
view whether anything is to be stored: 2% of the instructions of a rating through Django's handler,
where neither the rating's one request nor the API ever shows or adds a message. Here the storage is
made when a view, a template or ``django.contrib.messages`` first touches ``request._messages`` (the
attribute Django's messages read and write), and a response whose request never did is left alone,
as Django's middleware leaves it when the storage has nothing to store.
"""

from django.contrib.messages.middleware import MessageMiddleware
from django.contrib.messages.storage import default_storage
from django.utils.functional import SimpleLazyObject, empty


class LazyMessageMiddleware(MessageMiddleware):
    def process_request(self, request) -> None:
        request._messages = SimpleLazyObject(lambda: default_storage(request))

    def process_response(self, request, response):
        messages = getattr(request, "_messages", None)
        if isinstance(messages, SimpleLazyObject) and messages._wrapped is empty:
            return response  # never made: nothing was added or shown
        return super().process_response(request, response)
