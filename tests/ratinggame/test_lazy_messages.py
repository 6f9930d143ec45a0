"""Django's messages with a request's storage made on first use (``ratinggame.lazy_messages``): a
message added by one request is shown by the next, and a request that neither adds nor shows one
never makes the storage (Django's middleware made it for every request, the rating's too)."""

import pytest
from django.contrib import messages
from django.contrib.messages.storage.fallback import FallbackStorage
from django.http import HttpResponse
from django.test import RequestFactory

from ratinggame.lazy_messages import LazyMessageMiddleware


def _request():
    request = RequestFactory().get("/")
    request.session = {}
    return request


def test_a_request_that_uses_no_message_never_makes_the_storage(monkeypatch):
    made = []
    monkeypatch.setattr(FallbackStorage, "__init__", lambda self, request: made.append(request))
    request = _request()
    response = LazyMessageMiddleware(lambda request: HttpResponse("ok"))(request)
    assert response.status_code == 200
    assert made == []  # Django's MessageMiddleware made it: one here


def test_a_message_added_is_stored_and_read_back_by_the_next_request():
    def view(request):
        messages.success(request, "Report received.")
        return HttpResponse("added")

    first = _request()
    response = LazyMessageMiddleware(view)(first)
    cookie = response.cookies["messages"].value  # the fallback storage's first place: a cookie

    second = _request()
    second.COOKIES["messages"] = cookie
    shown = []
    LazyMessageMiddleware(lambda request: HttpResponse(shown.extend(str(m) for m in messages.get_messages(request))))(
        second
    )
    assert shown == ["Report received."]


@pytest.mark.django_db
def test_a_page_that_adds_a_message_shows_it_after_its_redirect(client, django_user_model):
    """Through the whole middleware stack: the import page's refusal is shown on the page it leads to."""
    staff = django_user_model.objects.create_user("researcher", password="x", is_staff=True)
    client.force_login(staff)
    answer = client.post("/research/import/", {}, follow=True)
    assert "Choose a manifest file" in answer.content.decode()
