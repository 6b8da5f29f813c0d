"""Target endpoints (list, admins create and change, never a secret value; the live check) and runs with a
target through the API: started by the target's id or name, read back with its latency and each item's snapshot."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from evaluations.models import Run, RunItem
from evaluations.services.executor import run_execute_in_process
from targets.models import Target, TargetSnapshot
from targets.services import DEMO_MAPPING, DEMO_TEMPLATE, target_create
from tests.api.conftest import assert_error
from tests.targets.test_target_runs import demo_version

# sqlite: the API also works on the embedded default (make test's second pass).
pytestmark = [pytest.mark.django_db, pytest.mark.sqlite]

UNREACHABLE = "http://127.0.0.1:9/query"  # the discard port: nothing listens there
SECRET = "s3cret-value-4711"
RUN_DETAIL_QUERIES = 4  # as tests/api/test_runs.py: the target comes from the run's own row
ITEM_DETAIL_QUERIES = 6  # tests/api/test_items.py's 5, plus the item's snapshot (the item page's selector)


def new_target(**extra):
    return {
        "name": "rag",
        "url": "http://127.0.0.1:8100/query",
        "request_template": DEMO_TEMPLATE,
        "response_mapping": DEMO_MAPPING,
    } | extra


@pytest.fixture
def rag(db) -> Target:
    return target_create(
        name="rag",
        url=UNREACHABLE,
        request_template=DEMO_TEMPLATE,
        response_mapping=DEMO_MAPPING,
        timeout_seconds=2.0,
        headers={"Authorization": {"env": "RAG_TOKEN_FOR_API_TESTS", "format": "Bearer {}"}},
    )


# --- /api/targets/ ------------------------------------------------------------------------------


def test_admins_create_list_read_and_change_targets(admin_api, viewer_api) -> None:
    headers = {"Authorization": {"env": "RAG_TOKEN", "format": "Bearer {}"}, "X-Tenant": "acme"}
    created = admin_api.post("/api/targets/", new_target(headers=headers, requests_per_minute=120), format="json")
    assert created.status_code == 201, created.content
    target = created.json()
    assert target["name"] == "rag" and target["method"] == "POST" and target["headers"] == headers
    assert target["response_mapping"] == DEMO_MAPPING and target["request_template"] == DEMO_TEMPLATE
    assert target["requests_per_minute"] == 120 and target["timeout_seconds"] == 30.0
    assert target["api_url"] == f"http://testserver/api/targets/{target['id']}/"
    assert target["web_url"] == f"http://testserver/targets/{target['id']}/"
    assert Target.objects.get(pk=target["id"]).headers == headers

    changed = admin_api.patch(
        f"/api/targets/{target['id']}/", {"timeout_seconds": 5, "max_concurrency": 2}, format="json"
    )
    assert changed.status_code == 200, changed.content
    assert changed.json()["timeout_seconds"] == 5.0 and changed.json()["max_concurrency"] == 2
    assert changed.json()["headers"] == headers  # untouched fields stay

    admin_api.post("/api/targets/", new_target(name="another"), format="json")
    listed = viewer_api.get("/api/targets/").json()
    assert listed["count"] == 2 and [t["name"] for t in listed["results"]] == ["another", "rag"]
    assert viewer_api.get(f"/api/targets/{target['id']}/").json()["timeout_seconds"] == 5.0


def test_a_literal_secret_header_is_refused_and_never_echoed(admin_api, rag) -> None:
    body = new_target(name="leaky", headers={"Authorization": f"Bearer {SECRET}"})
    error = assert_error(admin_api.post("/api/targets/", body, format="json"), 400, "invalid", "headers")
    assert SECRET not in str(error) and "environment" in error["fields"]["headers"][0]
    bad_env = {"X-Api-Key": {"env": SECRET + " !"}}
    error = assert_error(admin_api.post("/api/targets/", new_target(headers=bad_env), format="json"), 400, "invalid")
    assert "headers" in error["fields"] and SECRET not in str(error)
    patch = {"headers": {"X-Api-Key": SECRET}}
    error = assert_error(admin_api.patch(f"/api/targets/{rag.pk}/", patch, format="json"), 400, "invalid", "headers")
    assert SECRET not in str(error)
    assert not Target.objects.filter(name="leaky").exists()
    assert SECRET not in str(Target.objects.get(pk=rag.pk).headers)


@pytest.mark.parametrize(
    "body, field",
    [
        ({"url": "http://x/q"}, "name"),
        ({"name": "x"}, "url"),
        ({"name": "x", "url": "ftp://x/q"}, "url"),
        ({"name": "x", "url": "http://x/q", "method": "DELETE"}, "method"),
        ({"name": "x", "url": "http://x/q", "response_mapping": {"answer": "a[["}}, "response_mapping"),
        ({"name": "x", "url": "http://x/q", "response_mapping": {"colour": "a"}}, "response_mapping"),
        ({"name": "x", "url": "http://x/q", "request_template": {"q": "{{nope}}"}}, "request_template"),
        ({"name": "x", "url": "http://x/q", "headers": ["X-Api-Key"]}, "headers"),
        ({"name": "x", "url": "http://x/q", "timeout_seconds": 0}, "timeout_seconds"),
        ({"name": "x", "url": "http://x/q", "requests_per_minute": 0}, "requests_per_minute"),
        ({"name": "x", "url": "http://x/q", "colour": "red"}, "colour"),
        ({"name": "x", "url": "http://x/q", "request_template": {"q": "a\x00b"}}, "request_template"),
    ],
)
def test_bad_targets_are_400_naming_the_field(admin_api, body, field) -> None:
    body.setdefault("response_mapping", {"answer": "answer"})
    assert_error(admin_api.post("/api/targets/", body, format="json"), 400, "invalid", field)
    assert not Target.objects.exists()


def test_a_duplicate_name_and_a_name_change_are_400(admin_api, rag) -> None:
    assert_error(admin_api.post("/api/targets/", new_target(), format="json"), 400, "invalid", "name")
    assert_error(admin_api.patch(f"/api/targets/{rag.pk}/", {"name": "y"}, format="json"), 400, "invalid", "name")
    bad = {"response_mapping": {"answer": ""}}
    assert_error(admin_api.patch(f"/api/targets/{rag.pk}/", bad, format="json"), 400, "invalid", "response_mapping")
    assert Target.objects.get(pk=rag.pk).response_mapping == DEMO_MAPPING


def test_roles_and_missing_targets(anon_api, viewer_api, reviewer_api, admin_api, rag) -> None:
    assert_error(anon_api.get("/api/targets/"), 401, "not_authenticated")
    assert_error(anon_api.get(f"/api/targets/{rag.pk}/"), 401)
    for client in (viewer_api, reviewer_api):
        assert_error(client.post("/api/targets/", new_target(name="z"), format="json"), 403, "permission_denied")
        assert_error(client.patch(f"/api/targets/{rag.pk}/", {"timeout_seconds": 1}, format="json"), 403)
    assert_error(viewer_api.post(f"/api/targets/{rag.pk}/check/"), 403, "permission_denied")
    assert_error(anon_api.post(f"/api/targets/{rag.pk}/check/"), 401)
    assert_error(viewer_api.get("/api/targets/999999/"), 404, "not_found")
    assert_error(admin_api.patch("/api/targets/999999/", {"timeout_seconds": 1}, format="json"), 404)
    assert_error(reviewer_api.post("/api/targets/999999/check/"), 404)
    assert_error(admin_api.delete(f"/api/targets/{rag.pk}/"), 405)
    assert not Target.objects.filter(name="z").exists()


def test_the_check_reports_the_exact_error(reviewer_api, rag, monkeypatch) -> None:
    # the secret header's variable is not set: the error names it (not a value)
    response = reviewer_api.post(f"/api/targets/{rag.pk}/check/", {"query": "Who?"}, format="json")
    assert response.status_code == 200, response.content
    report = response.json()
    assert report["ok"] is False and report["extracted"] is None and report["query"] == "Who?"
    assert "RAG_TOKEN_FOR_API_TESTS" in report["message"]

    # set: the call goes out and nothing listens
    monkeypatch.setenv("RAG_TOKEN_FOR_API_TESTS", SECRET)
    report = reviewer_api.post(f"/api/targets/{rag.pk}/check/").json()
    assert report["ok"] is False and "ConnectError" in report["message"] and report["http_status"] is None
    assert report["query"]  # the default question
    assert SECRET not in str(report)
    assert_error(reviewer_api.post(f"/api/targets/{rag.pk}/check/", {"query": "x" * 6000}, format="json"), 400)


# --- Runs with a target -------------------------------------------------------------------------


def start_body(version, judge, **extra):
    return {"dataset": version.dataset.name, "judge": judge.name, "metrics": ["faithfulness", "retrieval"]} | extra


def test_start_a_run_with_a_target_by_name_or_id(reviewer_api, small_dataset, offline, rag) -> None:
    version = small_dataset("rivers")
    by_name = reviewer_api.post("/api/runs/", start_body(version, offline, target="rag"), format="json")
    assert by_name.status_code == 201, by_name.content
    assert by_name.json()["target"] == {"id": rag.pk, "name": "rag", "url": UNREACHABLE}
    run = Run.objects.get(pk=by_name.json()["id"])
    assert run.target == rag and run.target_config["name"] == "rag"

    by_id = reviewer_api.post("/api/runs/", start_body(version, offline, target=rag.pk), format="json")
    assert by_id.status_code == 201 and by_id.json()["target"]["id"] == rag.pk
    by_digits = reviewer_api.post("/api/runs/", start_body(version, offline, target=str(rag.pk)), format="json")
    assert by_digits.status_code == 201 and by_digits.json()["target"]["id"] == rag.pk

    stored = reviewer_api.post("/api/runs/", start_body(version, offline), format="json").json()
    assert stored["target"] is None
    explicit_null = reviewer_api.post("/api/runs/", start_body(version, offline, target=None), format="json")
    assert explicit_null.status_code == 201 and explicit_null.json()["target"] is None

    listed = reviewer_api.get("/api/runs/").json()["results"]
    assert [run["target"] and run["target"]["name"] for run in listed] == [None, None, "rag", "rag", "rag"]


@pytest.mark.parametrize("target", ["nope", 999999, "", True, ["rag"]])
def test_an_unknown_or_malformed_target_is_400_naming_it(reviewer_api, small_dataset, offline, rag, target) -> None:
    version = small_dataset("rivers")
    error = assert_error(
        reviewer_api.post("/api/runs/", start_body(version, offline, target=target), format="json"),
        400,
        "invalid",
        "target",
    )
    assert list(error["fields"]) == ["target"]
    assert not Run.objects.exists()


def test_run_reads_with_a_target_keep_their_query_counts(
    viewer, small_dataset, offline, rag, django_assert_num_queries
) -> None:
    from evaluations.services.runs import run_create

    version = small_dataset("rivers")
    for _ in range(3):
        run = run_create(dataset_version=version, judge_config=offline, metrics=["faithfulness"], target=rag)
    client = APIClient()
    client.force_authenticate(viewer)
    with django_assert_num_queries(RUN_DETAIL_QUERIES):
        assert client.get(f"/api/runs/{run.pk}/").json()["target"]["name"] == "rag"
    with django_assert_num_queries(2):  # the count, the page with datasets and judges (as without targets)
        assert len(client.get("/api/runs/").json()["results"]) == 3
    rag.delete()  # a deleted target: the run still says what it called
    assert client.get(f"/api/runs/{run.pk}/").json()["target"] == {"id": None, "name": "rag", "url": UNREACHABLE}


# --- Live: the demo RAG server --------------------------------------------------------------------


@pytest.mark.slow
def test_the_check_shows_what_each_mapping_extracted(reviewer_api, demo_rag, make_target) -> None:
    server = demo_rag("--fail-ids", "check")
    good = make_target(server.url, request_template={"query": "{{query}}"})  # no id: not failed
    report = reviewer_api.post(f"/api/targets/{good.pk}/check/", {"query": "Who authored STIP?"}, format="json").json()
    assert report["ok"] is True, report["message"]
    assert report["http_status"] == 200 and report["latency_ms"] >= 0 and report["failed_mapping"] == ""
    extracted = report["extracted"]
    assert extracted["answer"] and extracted["retrieved_ids"] == [c["id"] for c in extracted["contexts"]]
    assert set(report["found"]) == {"answer", "contexts", "retrieved_ids"}
    assert '"sources"' in report["body"] and report["body_truncated"] is False
    assert report["request"]["method"] == "POST"

    wrong = make_target(server.url, request_template={"query": "{{query}}"}, response_mapping={"answer": "result"})
    report = reviewer_api.post(f"/api/targets/{wrong.pk}/check/").json()
    assert report["ok"] is False and report["failed_mapping"] == "answer" and report["http_status"] == 200
    assert "`result` found nothing" in report["message"] and '"sources"' in report["body"]

    failing = make_target(server.url)  # the demo template sends id "check": this server fails it
    report = reviewer_api.post(f"/api/targets/{failing.pk}/check/").json()
    assert report["ok"] is False and report["http_status"] == 500 and "HTTP 500" in report["message"]
    assert report["body"]


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_run_with_a_target_reads_back_its_latency_and_each_items_snapshot(
    reviewer_api, viewer, demo_rag, make_target, offline, django_assert_num_queries
) -> None:
    # given a run started through the API with the demo target (one question fails with a 500)
    target = make_target(demo_rag("--fail-ids", "scenario-b-off-topic").url, name="demo")
    version = demo_version()
    body = {"dataset": version.dataset.name, "judge": offline.name, "metrics": ["faithfulness", "retrieval"]}
    created = reviewer_api.post("/api/runs/", body | {"target": "demo"}, format="json")
    assert created.status_code == 201, created.content
    run = run_execute_in_process(run=Run.objects.get(pk=created.json()["id"]))  # what a worker does

    # then the run read has the target and its latency figures
    detail = reviewer_api.get(f"/api/runs/{run.pk}/").json()
    assert detail["target"] == {"id": target.pk, "name": "demo", "url": target.url}
    figures = detail["aggregates"]["target"]
    assert figures["calls"] == version.item_count and figures["errors"] == 1
    assert figures["answered"] == version.item_count - 1 and figures["attempts"] >= figures["calls"]
    latency = figures["latency_ms"]
    assert 0 <= latency["p50"] <= latency["p95"] <= latency["max"] and latency["mean"] is not None

    # and each item read has what the target returned, and scores that answer
    answered = TargetSnapshot.objects.filter(item__run=run, status="ok", item__claims__isnull=False)
    snapshot = answered.distinct().order_by("item_id").first()  # with claims: their history is a query too
    client = APIClient()
    client.force_authenticate(viewer)
    with django_assert_num_queries(ITEM_DETAIL_QUERIES):
        item = client.get(f"/api/runs/{run.pk}/items/{snapshot.item_id}/").json()
    shown = item["target"]
    assert shown["status"] == "ok" and shown["error"] == "" and shown["answer"] == snapshot.answer
    assert shown["retrieved_ids"] == snapshot.retrieved_ids and shown["latency_ms"] == snapshot.latency_ms
    assert shown["contexts"][0]["id"] == snapshot.retrieved_ids[0] and shown["http_status"] == 200
    assert '"sources"' in shown["raw_body"] and shown["request"]["body"]["query"] == item["query"]
    assert item["response"] == snapshot.answer  # the answer scored is the target's, not the dataset's
    assert [context["id"] for context in item["contexts"]] == snapshot.retrieved_ids
    rows = client.get(f"/api/runs/{run.pk}/items/").json()["results"]
    assert next(row for row in rows if row["id"] == snapshot.item_id)["response"] == snapshot.answer

    failed = RunItem.objects.get(run=run, example__external_id="scenario-b-off-topic")
    item = client.get(f"/api/runs/{run.pk}/items/{failed.pk}/").json()
    assert item["status"] == "error" and item["target"]["status"] == "error"
    assert item["target"]["http_status"] == 500 and "HTTP 500" in item["target"]["error"]
    assert item["response"] == "" and item["target"]["raw_body"]

    # a run of stored answers has no target and no snapshot
    stored = reviewer_api.post("/api/runs/", body, format="json").json()
    assert stored["target"] is None


@pytest.mark.slow
def test_the_ci_gate_script_starts_a_run_with_a_target(live_server, make_user, rag, offline, tmp_path) -> None:
    from api.services import token_create
    from tests.api.test_flow import jsonl, run_script

    key = token_create(user=make_user("ci", role="admin")).key
    data = tmp_path / "questions.jsonl"
    data.write_bytes(jsonl(2))
    common = ["--file", str(data), "--dataset", "ci", "--judge", offline.name, "--metrics", "faithfulness"]
    common += ["--fail-under", "overall=0", "--timeout", "0"]

    unknown = run_script(live_server, key, *common, "--target", "nope")
    assert unknown.returncode == 2 and "target: unknown target 'nope'" in unknown.stderr, unknown.stderr
    started = run_script(live_server, key, *common, "--target", "rag")  # no worker: still queued after 0 s
    assert started.returncode == 2 and "started run" in started.stdout, started.stdout + started.stderr
    assert Run.objects.get().target == rag
