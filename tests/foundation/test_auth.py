"""Every page and API endpoint requires login; roles gate writes."""

from __future__ import annotations

import re

import pytest
from django.core.management import call_command
from django.urls import URLPattern, URLResolver, get_resolver

from evalsite.roles import has_role, user_role

PUBLIC = {"login", "logout"}
SAMPLE_ARGS = {"int": "1", "str": "x", "slug": "x", "path": "x", "uuid": "00000000-0000-0000-0000-000000000000"}


def _walk(patterns, prefix=""):
    for entry in patterns:
        if isinstance(entry, URLResolver):
            yield from _walk(entry.url_patterns, prefix + str(entry.pattern))
        elif isinstance(entry, URLPattern):
            yield entry, prefix + str(entry.pattern)


def _concrete(route: str) -> str | None:
    """A URL for a route with sample values; None for regex routes we cannot fill."""
    route = re.sub(r"<(?:(\w+):)?\w+>", lambda m: SAMPLE_ARGS.get(m.group(1) or "str", "x"), route)
    if any(ch in route for ch in "^$()[]?*+\\"):
        route = route.replace("^", "").replace("$", "").replace("\\Z", "").replace("\\", "")
        if any(ch in route for ch in "()[]?*+"):
            return None
    return "/" + route


def _urls():
    for pattern, route in _walk(get_resolver().url_patterns):
        if pattern.name in PUBLIC or route.startswith("static/"):
            continue
        url = _concrete(route)
        if url is not None:
            yield pattern.name or route, url


def test_the_walk_finds_the_apps_urls():
    urls = {url for _, url in _urls()}
    assert {"/", "/datasets/", "/admin/"} <= urls


@pytest.mark.django_db
@pytest.mark.parametrize(("name", "url"), list(_urls()))
def test_every_url_requires_login(client, name, url):
    response = client.get(url)

    if url.startswith("/api/"):
        assert response.status_code in (401, 403), f"{name} {url} answered {response.status_code}"
    else:
        assert response.status_code == 302, f"{name} {url} answered {response.status_code}"
        assert "login" in response["Location"], f"{name} {url} redirected to {response['Location']}"


@pytest.mark.django_db
def test_roles_rank(make_user):
    viewer = make_user("vic", role="viewer")
    reviewer = make_user("rita", role="reviewer")
    admin = make_user("ada", role="admin")
    plain = make_user("pat")

    assert [user_role(u) for u in (viewer, reviewer, admin, plain)] == ["viewer", "reviewer", "admin", "viewer"]
    assert not has_role(viewer, "reviewer")
    assert has_role(reviewer, "reviewer") and not has_role(reviewer, "admin")
    assert has_role(admin, "reviewer") and has_role(admin, "admin")


@pytest.mark.django_db
def test_create_admin_command_is_idempotent(client):
    call_command("create_admin", "--username", "boss", "--password", "first-pass-1")
    call_command("create_admin", "--username", "boss", "--password", "second-pass-2")

    assert client.login(username="boss", password="second-pass-2")
    from django.contrib.auth.models import User

    boss = User.objects.get(username="boss")
    assert user_role(boss) == "admin" and boss.is_superuser
    assert User.objects.filter(username="boss").count() == 1


@pytest.mark.django_db
def test_create_admin_rejects_short_password():
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="at least 8"):
        call_command("create_admin", "--username", "boss", "--password", "short")


@pytest.mark.django_db
def test_login_page_lets_a_user_in(client, make_user):
    make_user("ann", role="viewer")

    response = client.post("/login/", {"username": "ann", "password": "pw-12345678"})

    assert response.status_code == 302
    assert client.get("/datasets/").status_code == 200


@pytest.mark.django_db
def test_a_wrong_password_is_reported_once(client, make_user):
    make_user("ann", role="viewer")

    response = client.post("/login/", {"username": "ann", "password": "wrong-password"})

    assert response.status_code == 200
    html = response.content.decode()
    assert html.count("Please enter a correct username and password") == 1
    assert "errorlist" not in html  # no second copy as a bullet
