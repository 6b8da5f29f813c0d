"""Tokens (hashed, Token/Bearer, revoked), the tokens page, create_api_token, session + CSRF, roles, error shape."""

from __future__ import annotations

import hashlib
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client
from rest_framework.test import APIClient

from api.models import ApiToken
from api.services import token_create
from tests.api.conftest import assert_error

# sqlite: the API also works on the embedded default (make test's second pass).
pytestmark = [pytest.mark.django_db, pytest.mark.sqlite]

READ_ENDPOINTS = [
    "/api/datasets/",
    "/api/datasets/1/",
    "/api/datasets/1/versions/",
    "/api/datasets/1/versions/1/examples/",
    "/api/judges/",
    "/api/judges/agreement/",
    "/api/runs/",
    "/api/runs/1/",
    "/api/runs/1/items/",
    "/api/runs/1/items/1/",
    "/api/runs/1/gate/?fail_under=overall=0.5",
    "/api/compare/?base=1&candidate=2",
    "/api/schema/",
]
WRITE_ENDPOINTS = [
    "/api/datasets/",
    "/api/judges/",
    "/api/judges/1/check/",
    "/api/runs/",
    "/api/runs/1/cancel/",
    "/api/runs/1/resume/",
    "/api/runs/1/rerun-failed/",
    "/api/claims/1/override/",
    "/api/claims/1/confirm/",
]


@pytest.mark.parametrize("url", READ_ENDPOINTS)
def test_anonymous_reads_are_401_with_www_authenticate(anon_api, url) -> None:
    response = anon_api.get(url)
    assert_error(response, 401, "not_authenticated")
    assert response["WWW-Authenticate"].startswith("Token")


@pytest.mark.parametrize("url", WRITE_ENDPOINTS)
def test_anonymous_writes_are_401(anon_api, url) -> None:
    assert_error(anon_api.post(url, {}, format="json"), 401, "not_authenticated")


def test_a_token_is_stored_hashed_and_works_as_token_or_bearer(viewer) -> None:
    created = token_create(user=viewer, name="ci")
    stored = ApiToken.objects.get()
    assert stored.key_hash == hashlib.sha256(created.key.encode()).hexdigest()
    assert created.key not in {stored.key_hash, stored.prefix, stored.name}
    for scheme in ("Token", "Bearer", "token"):
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"{scheme} {created.key}")
        assert client.get("/api/runs/").status_code == 200
    stored.refresh_from_db()
    assert stored.last_used_at is not None


@pytest.mark.parametrize("header", ["Token nope", "Bearer ", "Token a b", "Token \u00e9"])
def test_bad_tokens_are_401(header) -> None:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=header)
    response = client.get("/api/runs/")
    assert_error(response, 401, "authentication_failed" if header != "Bearer " else None)


def test_a_revoked_token_is_401(viewer) -> None:
    created = token_create(user=viewer)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {created.key}")
    assert client.get("/api/runs/").status_code == 200
    ApiToken.objects.filter(pk=created.token.pk).update(revoked_at="2026-01-01T00:00:00Z")
    assert_error(client.get("/api/runs/"), 401)


def test_create_api_token_prints_the_token_as_its_last_word(viewer) -> None:
    out = StringIO()
    call_command("create_api_token", viewer.username, stdout=out)
    key = out.getvalue().split()[-1]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert client.get("/api/judges/").status_code == 200
    assert not ApiToken.objects.filter(key_hash=key).exists()


def test_create_api_token_for_an_unknown_user_fails() -> None:
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="no user named"):
        call_command("create_api_token", "ghost", stdout=StringIO())


def test_the_tokens_page_creates_a_token_shown_once_and_revokes_it(viewer) -> None:
    browser = Client()
    browser.force_login(viewer)
    page = browser.get("/account/tokens/")
    assert page.status_code == 200 and b"API tokens" in page.content
    assert b'href="/account/tokens/"' in browser.get("/runs/").content  # linked from the header
    created = browser.post("/account/tokens/", {"name": "nightly CI"})
    token = ApiToken.objects.get(user=viewer)
    key = created.context["created"].key
    assert key.encode() in created.content and created["Cache-Control"] == "no-store"
    assert key.encode() not in browser.get("/account/tokens/").content  # shown once
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert api.get("/api/runs/").status_code == 200
    browser.post(f"/account/tokens/{token.pk}/revoke/")
    assert_error(api.get("/api/runs/"), 401)


def test_nobody_revokes_someone_elses_token(viewer, reviewer) -> None:
    token = token_create(user=viewer).token
    browser = Client()
    browser.force_login(reviewer)
    browser.post(f"/account/tokens/{token.pk}/revoke/")
    token.refresh_from_db()
    assert token.revoked_at is None


def test_the_tokens_page_needs_login() -> None:
    response = Client().get("/account/tokens/")
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_session_auth_reads_and_enforces_csrf_on_writes(reviewer) -> None:
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(reviewer)
    assert browser.get("/api/runs/").status_code == 200
    response = browser.post("/api/runs/", {}, content_type="application/json")
    error = assert_error(response, 403, "permission_denied")
    assert "CSRF" in error["message"]


def test_a_viewer_reads_but_gets_403_on_writes(viewer_api, finished_run) -> None:
    assert viewer_api.get(f"/api/runs/{finished_run.pk}/").status_code == 200
    body = {"dataset": "seeded", "judge": finished_run.judge_config.name, "metrics": ["relevancy"]}
    assert_error(viewer_api.post("/api/runs/", body, format="json"), 403, "permission_denied")
    assert_error(viewer_api.post(f"/api/runs/{finished_run.pk}/cancel/"), 403)
    claim = finished_run.items.first().claims.first()
    assert_error(viewer_api.post(f"/api/claims/{claim.pk}/confirm/", {}, format="json"), 403)


def test_a_reviewer_cannot_manage_judges_or_datasets(reviewer_api) -> None:
    assert_error(reviewer_api.post("/api/judges/", {"name": "x"}, format="json"), 403, "permission_denied")
    assert_error(reviewer_api.post("/api/datasets/", {"name": "x", "items": []}, format="json"), 403)


def test_unknown_urls_and_methods_use_the_error_shape(viewer_api) -> None:
    assert_error(viewer_api.get("/api/nothing/here/"), 404, "not_found")
    assert_error(viewer_api.get("/api/runs/999999/"), 404, "not_found")
    assert_error(viewer_api.delete("/api/runs/"), 405, "method_not_allowed")
    assert_error(viewer_api.put("/api/judges/"), 405)


def test_an_unexpected_error_is_logged_and_answered_in_the_shape(viewer_api, monkeypatch, caplog) -> None:
    from evaluations import run_selectors

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(run_selectors, "run_list", broken)
    response = viewer_api.get("/api/runs/")
    assert_error(response, 500, "server_error")
    assert "boom" not in response.content.decode()
    assert "API error on GET /api/runs/" in caplog.text


def test_malformed_bodies_and_media_types_use_the_error_shape(reviewer_api) -> None:
    broken = reviewer_api.post("/api/runs/", "{not json", content_type="application/json")
    assert_error(broken, 400, "parse_error")
    assert_error(reviewer_api.post("/api/runs/", "x", content_type="text/plain"), 415, "unsupported_media_type")
