"""Judge endpoints: list, admins create and change (never the key), the check, agreement."""

from __future__ import annotations

import pytest

from evaluations.agreement import judge_agreement
from evaluations.services.overrides import claim_override
from judges.models import JudgeConfig
from tests.api.conftest import assert_error

# sqlite: the API also works on the embedded default (make test's second pass).
pytestmark = [pytest.mark.django_db, pytest.mark.sqlite]

NEW_JUDGE = {"name": "gpt", "provider": "openai", "model": "gpt-4.1-mini", "rpm": None}


def test_admins_create_and_change_judges(admin_api) -> None:
    body = {"name": "gpt", "provider": "openai", "model": "gpt-4.1-mini", "requests_per_minute": 500}
    created = admin_api.post("/api/judges/", body, format="json")
    assert created.status_code == 201, created.content
    judge = created.json()
    assert judge["api_key_env"] == "OPENAI_API_KEY" and judge["requests_per_minute"] == 500
    assert "api_key" not in judge and judge["spend"] == 0 and judge["call_count"] == 0
    changed = admin_api.patch(f"/api/judges/{judge['id']}/", {"temperature": 0.5, "max_concurrency": 2}, format="json")
    assert changed.status_code == 200, changed.content
    assert changed.json()["temperature"] == 0.5 and changed.json()["max_concurrency"] == 2
    assert admin_api.get("/api/judges/").json()["results"][0]["name"] == "gpt"
    assert admin_api.get(f"/api/judges/{judge['id']}/").json()["model"] == "gpt-4.1-mini"


def test_the_key_itself_is_never_accepted(admin_api) -> None:
    body = {"name": "gpt", "provider": "openai", "model": "m", "api_key": "sk-secret"}
    error = assert_error(admin_api.post("/api/judges/", body, format="json"), 400, "invalid", "api_key")
    assert "sk-secret" not in str(error)
    body = {"name": "gpt", "provider": "openai", "model": "m", "api_key_env": "sk-secret value"}
    error = assert_error(admin_api.post("/api/judges/", body, format="json"), 400, "invalid", "api_key_env")
    assert "sk-secret" not in str(error)
    assert not JudgeConfig.objects.exists()


@pytest.mark.parametrize(
    "body, field",
    [
        ({"provider": "openai", "model": "m"}, "name"),
        ({"name": "x", "provider": "nope", "model": "m"}, "provider"),
        ({"name": "x", "provider": "openai_compatible", "model": "m"}, "base_url"),
        ({"name": "x", "provider": "openai", "model": "m", "temperature": 7}, "temperature"),
        ({"name": "x", "provider": "openai", "model": "m", "base_url": "ftp://x"}, "base_url"),
        ({"name": "x", "provider": "openai", "model": "m", "colour": "red"}, "colour"),
    ],
)
def test_bad_judges_are_400_naming_the_field(admin_api, body, field) -> None:
    assert_error(admin_api.post("/api/judges/", body, format="json"), 400, "invalid", field)


def test_a_duplicate_name_and_a_name_change_are_400(admin_api, offline) -> None:
    body = {"name": offline.name, "provider": "offline", "model": "x"}
    assert_error(admin_api.post("/api/judges/", body, format="json"), 400, "invalid", "name")
    assert_error(admin_api.patch(f"/api/judges/{offline.pk}/", {"name": "y"}, format="json"), 400, "invalid", "name")


def test_patch_of_an_unknown_judge_is_404(admin_api) -> None:
    assert_error(admin_api.patch("/api/judges/999999/", {"temperature": 0.1}, format="json"), 404)


def test_the_check_answers_with_the_offline_judge(reviewer_api, viewer_api, offline) -> None:
    response = reviewer_api.post(f"/api/judges/{offline.pk}/check/")
    assert response.status_code == 200, response.content
    assert response.json()["ok"] is True and "offline heuristic" in response.json()["message"]
    assert_error(viewer_api.post(f"/api/judges/{offline.pk}/check/"), 403)
    assert_error(reviewer_api.post("/api/judges/999999/check/"), 404)


def test_agreement_gives_the_services_numbers(viewer_api, finished_run, reviewer) -> None:
    claim = finished_run.items.first().claims.first()
    claim_override(claim=claim, reviewer=reviewer, new_verdict="CONTRADICTED", reason="wrong")
    response = viewer_api.get("/api/judges/agreement/")
    assert response.status_code == 200
    (entry,) = response.json()
    (expected,) = judge_agreement()
    assert entry["reviewed"] == expected.reviewed == 1 and entry["overridden"] == expected.overridden
    assert entry["labels"] == list(expected.labels) and entry["confusion"] == expected.confusion
    assert viewer_api.get(f"/api/judges/agreement/?run={finished_run.pk}").json() == response.json()
    assert viewer_api.get("/api/judges/agreement/?judge=999999").json() == []
    assert_error(viewer_api.get("/api/judges/agreement/?run=x"), 400, "invalid", "run")
