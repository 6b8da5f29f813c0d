"""The judges page: configs, spend, the live check (same as check_judge), admin create and edit."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.urls import reverse

from judges.models import JudgeCall, JudgeConfig
from judges.services import judge_config_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def offline():
    return judge_config_create(name="offline", provider="offline", model="heuristic-v1", max_concurrency=0)


@pytest.fixture
def gpt():
    return judge_config_create(
        name="gpt",
        provider="openai",
        model="gpt-4.1-mini",
        api_key_env="EVALSITE_TEST_NO_SUCH_KEY",
        requests_per_minute=500,
        input_price_per_million="0.40",
        output_price_per_million="1.60",
    )


def login(client, make_user, role: str | None):
    client.force_login(make_user(role or "viewer", role=role))
    return client


def test_the_page_requires_login(client):
    assert client.get(reverse("judges:list"))["Location"].startswith("/login/")


def test_the_page_lists_limits_prices_spend_and_labels_the_heuristic(client, make_user, offline, gpt):
    JudgeCall.objects.create(
        config=gpt,
        cache_key="a",
        prompt_name="p",
        prompt_version="1",
        request={},
        input_tokens=1000,
        output_tokens=200,
        cost=Decimal("0.000720"),
    )
    JudgeCall.objects.create(
        config=gpt,
        cache_key="b",
        prompt_name="p",
        prompt_version="1",
        request={},
        input_tokens=1000,
        output_tokens=200,
        cost=Decimal("0.000720"),
    )

    html = login(client, make_user, None).get(reverse("judges:list")).content.decode()

    assert "heuristic, not an LLM" in html
    assert "gpt-4.1-mini" in html and "$EVALSITE_TEST_NO_SUCH_KEY" in html
    assert "500 req/min" in html and "$0.40 in" in html and "$1.60 out" in html
    assert "$0.0014" in html and "2 calls" in html and "2,400 tokens" in html
    assert "Check" not in html and "Edit" not in html and "+ New judge" not in html  # a viewer reads only


def test_no_judges_yet_tells_an_admin_what_to_do(client, make_user):
    html = login(client, make_user, "admin").get(reverse("judges:list")).content.decode()

    assert "No judges yet" in html and 'href="/judges/new/"' in html


def test_the_check_of_the_offline_judge_shows_its_latency(client, make_user, offline):
    response = login(client, make_user, "reviewer").post(
        reverse("judges:check", args=[offline.pk]), HTTP_HX_REQUEST="true", HTTP_HX_TARGET=f"check-{offline.pk}"
    )

    html = response.content.decode()
    assert response.status_code == 200 and "<main>" not in html
    assert "alert-success" in html and " ms" in html and "[offline heuristic, not an LLM]" in html


def test_the_check_shows_the_exact_error(client, make_user, gpt, monkeypatch):
    monkeypatch.delenv("EVALSITE_TEST_NO_SUCH_KEY", raising=False)

    response = login(client, make_user, "reviewer").post(reverse("judges:check", args=[gpt.pk]), HTTP_HX_REQUEST="true")

    html = response.content.decode()
    assert "alert-error" in html and "environment variable EVALSITE_TEST_NO_SUCH_KEY is not set" in html


def test_the_check_without_htmx_reports_in_a_message(client, make_user, offline):
    response = login(client, make_user, "reviewer").post(reverse("judges:check", args=[offline.pk]), follow=True)

    assert "answered in" in response.content.decode()


def test_a_viewer_cannot_run_a_check(client, make_user, offline):
    assert login(client, make_user, None).post(reverse("judges:check", args=[offline.pk])).status_code == 403


def judge_data(**changes) -> dict:
    data = {
        "name": "claude",
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "base_url": "",
        "api_key_env": "ANTHROPIC_API_KEY",
        "temperature": 0,
        "max_tokens": 1024,
        "timeout_seconds": 60,
        "max_concurrency": 8,
        "requests_per_minute": "",
        "tokens_per_minute": "",
        "input_price_per_million": "3",
        "output_price_per_million": "15",
    }
    return data | changes


def test_an_admin_creates_a_judge(client, make_user):
    response = login(client, make_user, "admin").post(reverse("judges:create"), judge_data())

    assert response.status_code == 302
    judge = JudgeConfig.objects.get(name="claude")
    assert judge.api_key_env == "ANTHROPIC_API_KEY" and judge.output_price_per_million == 15


def test_an_api_key_pasted_as_the_variable_name_is_refused_and_never_shown_back(client, make_user):
    secret = "sk-ant-api03-verysecretvalue"

    response = login(client, make_user, "admin").post(reverse("judges:create"), judge_data(api_key_env=secret))

    html = response.content.decode()
    assert response.status_code == 200 and "is not an environment variable name" in html
    assert secret not in html
    assert not JudgeConfig.objects.filter(name="claude").exists()


def test_invalid_fields_are_shown_next_to_them(client, make_user):
    response = login(client, make_user, "admin").post(
        reverse("judges:create"), judge_data(provider="openai_compatible", base_url="", temperature=5)
    )

    errors = response.context["form"].errors
    assert "is required for openai_compatible judges" in str(errors["base_url"])
    assert "must be between 0 and 2" in str(errors["temperature"])


def test_an_admin_edits_a_judge_but_not_its_name(client, make_user, gpt):
    client = login(client, make_user, "admin")

    response = client.post(
        reverse("judges:edit", args=[gpt.pk]),
        judge_data(name="renamed", provider="openai", model="gpt-5", api_key_env="OPENAI_API_KEY"),
    )

    assert response.status_code == 302
    gpt.refresh_from_db()
    assert gpt.name == "gpt" and gpt.model == "gpt-5" and gpt.api_key_env == "OPENAI_API_KEY"


@pytest.mark.parametrize("role", [None, "reviewer"])
def test_only_admins_create_and_edit(client, make_user, gpt, role):
    client = login(client, make_user, role)

    assert client.get(reverse("judges:create")).status_code == 403
    assert client.post(reverse("judges:edit", args=[gpt.pk]), judge_data(model="x")).status_code == 403
    gpt.refresh_from_db()
    assert gpt.model == "gpt-4.1-mini"


def test_an_unknown_judge_is_a_404(client, make_user):
    assert login(client, make_user, "admin").get(reverse("judges:edit", args=[999])).status_code == 404
