"""Run endpoints: start (by id or name), errors naming the field, list filters, read (pinned queries),
cancel / resume / re-run failed, the gate, idempotency (incl. two concurrent identical POSTs), callback URLs."""

from __future__ import annotations

import threading

import pytest
from django.db import connection
from rest_framework.test import APIClient

from api.models import IdempotencyKey, RunCallback
from evaluations.gates import check_bars, parse_fail_under
from evaluations.models import Run, RunStatus
from tests.api.conftest import assert_error, client_for
from tests.evaluations.scored_runs import ERROR, scored_run

# sqlite: the API also works on the embedded default (make test's second pass).
pytestmark = [pytest.mark.django_db, pytest.mark.sqlite]

RUN_DETAIL_QUERIES = 4  # the run with its relations, its review counts, its callback, its audit


def start_body(version, judge, **extra):
    return {"dataset": version.dataset.name, "judge": judge.name, "metrics": ["faithfulness", "relevancy"]} | extra


def test_start_a_run_by_names_then_read_it(reviewer_api, small_dataset, offline) -> None:
    version = small_dataset("rivers")
    response = reviewer_api.post("/api/runs/", start_body(version, offline, name="nightly"), format="json")
    assert response.status_code == 201, response.content
    run = response.json()
    assert run["status"] == "queued" and run["name"] == "nightly"
    assert run["url"] == f"http://testserver/api/runs/{run['id']}/"
    assert run["web_url"] == f"http://testserver/runs/{run['id']}/"
    assert run["dataset"] == {"id": version.dataset_id, "name": "rivers", "version": 1, "version_id": version.pk}
    assert run["judge"]["name"] == offline.name and run["judge"]["is_heuristic"] is True
    assert run["progress"]["items_total"] == 3 and run["callback"] is None
    assert Run.objects.get(pk=run["id"]).created_by.username == "rita"
    detail = reviewer_api.get(f"/api/runs/{run['id']}/").json()
    assert detail["id"] == run["id"] and detail["metrics"] == ["faithfulness", "relevancy"]


def test_start_by_ids_with_a_version_and_settings(reviewer_api, small_dataset, offline) -> None:
    small_dataset("rivers", count=2)
    version = small_dataset("rivers", count=4)  # version 2
    body = {
        "dataset": version.dataset_id,
        "version": 1,
        "judge": offline.pk,
        "metrics": ["rubric"],
        "settings": {"repeats": 2},
    }
    response = reviewer_api.post("/api/runs/", body, format="json")
    assert response.status_code == 201, response.content
    run = Run.objects.get(pk=response.json()["id"])
    assert run.dataset_version.number == 1 and run.settings["repeats"] == 2 and run.items_total == 2


@pytest.mark.parametrize(
    "change, field",
    [
        ({"dataset": "nope"}, "dataset"),
        ({"dataset": 999999}, "dataset"),
        ({"version": 9}, "dataset"),
        ({"version": 0}, "version"),
        ({"judge": "nope"}, "judge"),
        ({"metrics": []}, "metrics"),
        ({"metrics": ["nope"]}, "metrics"),
        ({"metrics": "faithfulness"}, "metrics"),
        ({"settings": {"repeats": 0}}, "settings.repeats"),
        ({"settings": {"colour": 1}}, "settings.colour"),
        ({"settings": [1]}, "settings"),
        ({"dataset": True}, "dataset"),
        ({"callback_url": "ftp://example.com/x"}, "callback_url"),
        ({"callback_url": "http://127.0.0.1:9/hook"}, "callback_url"),
        ({"callback_url": "http://10.1.2.3/hook"}, "callback_url"),
        ({"callback_url": "http://localhost/hook"}, "callback_url"),
    ],
)
def test_bad_run_input_is_400_naming_the_field(reviewer_api, small_dataset, offline, change, field) -> None:
    body = start_body(small_dataset("rivers"), offline) | change
    assert_error(reviewer_api.post("/api/runs/", body, format="json"), 400, "invalid", field)
    assert not Run.objects.exists()


def test_a_callback_url_is_kept_and_shown(reviewer_api, small_dataset, offline, settings) -> None:
    settings.API_CALLBACK_ALLOW_PRIVATE = True
    body = start_body(small_dataset(), offline, callback_url="http://127.0.0.1:9/hook")
    run = reviewer_api.post("/api/runs/", body, format="json").json()
    assert run["callback"]["url"] == "http://127.0.0.1:9/hook" and run["callback"]["status"] == "pending"
    assert RunCallback.objects.get().base_url == "http://testserver"


def test_list_filters_as_the_runs_page_and_rejects_bad_values(viewer_api, finished_run, small_dataset, offline) -> None:
    other = scored_run(small_dataset("lakes"), offline, {"q-1": {"relevancy": 1.0}})
    listing = viewer_api.get("/api/runs/").json()
    assert [r["id"] for r in listing["results"]] == [other.pk, finished_run.pk]
    by_dataset = viewer_api.get(f"/api/runs/?dataset={finished_run.dataset_version.dataset_id}").json()
    assert [r["id"] for r in by_dataset["results"]] == [finished_run.pk]
    assert viewer_api.get(f"/api/runs/?judge={offline.pk}").json()["count"] == 1
    assert viewer_api.get("/api/runs/?status=running").json()["count"] == 0
    assert_error(viewer_api.get("/api/runs/?status=nope"), 400, "invalid", "status")
    assert_error(viewer_api.get("/api/runs/?dataset=999999"), 400, "invalid", "dataset")
    assert_error(viewer_api.get("/api/runs/?judge=x"), 400, "invalid", "judge")


def test_run_detail_has_progress_aggregates_usage_timings_and_pinned_queries(
    finished_run, viewer, django_assert_num_queries
) -> None:
    client = APIClient()
    client.force_authenticate(viewer)
    with django_assert_num_queries(RUN_DETAIL_QUERIES):
        body = client.get(f"/api/runs/{finished_run.pk}/").json()
    assert body["status"] == "completed"
    assert body["progress"] == {
        "items_total": 6,
        "items_done": 6,
        "items_failed": 0,
        "items_finished": 6,
        "reviewed": 0,
        "to_review": 6,
    }
    assert body["aggregates"]["metrics"]["faithfulness"]["covered"] == 6
    assert body["summary"][0]["metric"] == "faithfulness"
    assert set(body["usage"]) == {"judge_calls", "cache_hits", "input_tokens", "output_tokens", "cost"}
    assert body["timings"]["finished_at"] is not None


def test_cancel_resume_and_rerun_failed(reviewer_api, small_dataset, offline) -> None:
    version = small_dataset()
    run = reviewer_api.post("/api/runs/", start_body(version, offline), format="json").json()
    cancelled = reviewer_api.post(f"/api/runs/{run['id']}/cancel/")
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    error = assert_error(reviewer_api.post(f"/api/runs/{run['id']}/cancel/"), 409, "conflict")
    assert "cancelled" in error["message"]
    resumed = reviewer_api.post(f"/api/runs/{run['id']}/resume/")
    assert resumed.status_code == 200 and resumed.json()["status"] == "running"
    assert_error(reviewer_api.post(f"/api/runs/{run['id']}/rerun-failed/"), 409, "conflict")
    failed = scored_run(version, offline, {"q-1": {"relevancy": 1.0}, "q-2": ERROR})
    rerun = reviewer_api.post(f"/api/runs/{failed.pk}/rerun-failed/")
    assert rerun.status_code == 200 and rerun.json()["status"] == "running"
    assert_error(reviewer_api.post("/api/runs/999999/cancel/"), 404)


def test_the_gate_applies_evaluates_rules(viewer_api, finished_run) -> None:
    url = f"/api/runs/{finished_run.pk}/gate/"
    mean = finished_run.aggregates["metrics"]["faithfulness"]["mean"]
    passing = viewer_api.get(f"{url}?fail_under=faithfulness={mean - 0.01}").json()
    assert passing["passed"] is True and passing["exit_code"] == 0 and passing["finished"] is True
    assert passing["bars"] == [{"metric": "faithfulness", "bar": mean - 0.01, "value": mean, "passed": True}]
    failing = viewer_api.get(f"{url}?fail_under=faithfulness={mean + 0.01},overall=0").json()
    assert failing["passed"] is False and failing["exit_code"] == 1
    expected = check_bars(parse_fail_under(f"faithfulness={mean + 0.01},overall=0"), finished_run.aggregates)
    assert failing["bars"] == [result.as_dict() for result in expected]
    assert_error(viewer_api.get(url), 400, "invalid", "fail_under")
    assert_error(viewer_api.get(f"{url}?fail_under=faithfulness"), 400, "invalid", "fail_under")
    assert_error(viewer_api.get(f"{url}?fail_under=correctness=3"), 400, "invalid", "fail_under")


def test_the_gate_fails_runs_with_errors_unless_allowed_and_unfinished_runs(
    viewer_api, reviewer_api, small_dataset, offline
) -> None:
    version = small_dataset()
    errored = scored_run(version, offline, {"q-1": {"relevancy": 1.0}, "q-2": ERROR}, metrics=["relevancy"])
    from evaluations.services.runs import run_aggregates_refresh

    run_aggregates_refresh(run=errored)
    url = f"/api/runs/{errored.pk}/gate/?fail_under=relevancy=0.5"
    gate = viewer_api.get(url).json()
    assert gate["passed"] is False and gate["exit_code"] == 2 and "1 items in error" in gate["problem"]
    assert viewer_api.get(f"{url}&allow_errors=true").json()["passed"] is True
    queued = reviewer_api.post("/api/runs/", start_body(version, offline), format="json").json()
    gate = viewer_api.get(f"/api/runs/{queued['id']}/gate/?fail_under=relevancy=0.5").json()
    assert gate["finished"] is False and gate["passed"] is False and "not finished" in gate["problem"]


# --- Idempotency ------------------------------------------------------------------------------------


def test_the_same_key_returns_the_first_run_and_a_different_body_is_422(reviewer_api, small_dataset, offline) -> None:
    body = start_body(small_dataset(), offline)
    first = reviewer_api.post("/api/runs/", body, format="json", HTTP_IDEMPOTENCY_KEY="build-42")
    assert first.status_code == 201
    again = reviewer_api.post("/api/runs/", body, format="json", HTTP_IDEMPOTENCY_KEY="build-42")
    assert again.status_code == 200 and again.json()["id"] == first.json()["id"]
    changed = reviewer_api.post("/api/runs/", body | {"name": "x"}, format="json", HTTP_IDEMPOTENCY_KEY="build-42")
    assert_error(changed, 422, "idempotency_key_reused")
    assert Run.objects.count() == 1
    other = reviewer_api.post("/api/runs/", body, format="json", HTTP_IDEMPOTENCY_KEY="build-43")
    assert other.status_code == 201 and Run.objects.count() == 2


def test_keys_are_per_user_expire_after_24_hours_and_a_failed_request_keeps_none(
    reviewer_api, admin, small_dataset, offline
) -> None:
    body = start_body(small_dataset(), offline)
    first = reviewer_api.post("/api/runs/", body, format="json", HTTP_IDEMPOTENCY_KEY="k")
    by_admin = client_for(admin).post("/api/runs/", body, format="json", HTTP_IDEMPOTENCY_KEY="k")
    assert by_admin.status_code == 201 and by_admin.json()["id"] != first.json()["id"]
    IdempotencyKey.objects.update(created_at="2020-01-01T00:00:00Z")
    later = reviewer_api.post("/api/runs/", body, format="json", HTTP_IDEMPOTENCY_KEY="k")
    assert later.status_code == 201 and later.json()["id"] != first.json()["id"]
    bad = reviewer_api.post("/api/runs/", body | {"metrics": ["nope"]}, format="json", HTTP_IDEMPOTENCY_KEY="k2")
    assert_error(bad, 400, "invalid", "metrics")
    fixed = reviewer_api.post("/api/runs/", body, format="json", HTTP_IDEMPOTENCY_KEY="k2")
    assert fixed.status_code == 201
    assert_error(reviewer_api.post("/api/runs/", body, format="json", HTTP_IDEMPOTENCY_KEY="x" * 256), 400)


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif("connection.vendor != 'postgresql'", reason="row locks of PostgreSQL")
def test_two_concurrent_identical_posts_create_one_run(reviewer, small_dataset, offline, monkeypatch) -> None:
    from api import services
    from evaluations.services import runs as run_services

    body = start_body(small_dataset(), offline)
    real_create = run_services.run_create
    both_inside = threading.Barrier(2, timeout=10)

    def create_unqueued(**kwargs):
        return real_create(**kwargs, enqueue=False)

    monkeypatch.setattr(run_services, "run_create", create_unqueued)
    real_idempotent = services.run_create_idempotent

    def synchronised(**kwargs):
        both_inside.wait()  # both requests reach the key INSERT together
        return real_idempotent(**kwargs)

    monkeypatch.setattr(services, "run_create_idempotent", synchronised)
    results: list = [None, None]

    def post(index: int) -> None:
        try:
            results[index] = client_for(reviewer).post(
                "/api/runs/", body, format="json", HTTP_IDEMPOTENCY_KEY="same-build"
            )
        finally:
            connection.close()

    threads = [threading.Thread(target=post, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    statuses = sorted(response.status_code for response in results)
    assert statuses == [200, 201], [r.content for r in results]
    assert results[0].json()["id"] == results[1].json()["id"]
    assert Run.objects.count() == 1 and IdempotencyKey.objects.count() == 1
    assert Run.objects.get().status == RunStatus.QUEUED


def test_the_runs_list_reads_a_page_in_fixed_queries(viewer, small_dataset, offline, django_assert_num_queries) -> None:
    client = APIClient()
    client.force_authenticate(viewer)
    version = small_dataset()
    for count in (1, 6):
        while Run.objects.count() < count:
            scored_run(version, offline, {"q-1": {"relevancy": 1.0}})
        with django_assert_num_queries(2):  # the count, the page with datasets and judges
            assert client.get("/api/runs/").json()["count"] == count
