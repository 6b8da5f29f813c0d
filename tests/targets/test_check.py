"""The check service and `manage.py check_target` / `create_target` against the demo RAG server."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from targets.check import target_check
from targets.models import Target

pytestmark = [pytest.mark.django_db, pytest.mark.slow]  # starts the demo RAG server


def test_check_shows_what_each_mapping_extracted(demo_rag, make_target):
    target = make_target(demo_rag().url)

    report = target_check(target, query="Who authored the STIP proposal?")

    assert report.ok, report.message
    assert report.http_status == 200
    assert report.extracted["answer"].endswith("]")
    assert report.extracted["retrieved_ids"][0] in {"stip-tally", "stip-snapshot", "stip-forum"}
    assert report.extracted["retrieved_ids"] == [context["id"] for context in report.extracted["contexts"]]
    assert '"answer"' in report.body


def test_check_names_the_mapping_that_found_nothing_and_shows_the_body(demo_rag, make_target):
    target = make_target(demo_rag().url, response_mapping={"answer": "result.text"})

    report = target_check(target)

    assert not report.ok
    assert report.failed_mapping == "answer"
    assert "HTTP 200, mapping answer: `result.text` found nothing in the response" in report.message
    assert '"sources"' in report.body


def test_check_reports_the_http_status_and_body_of_an_error(demo_rag, make_target):
    target = make_target(demo_rag("--error-rate", "1").url)

    report = target_check(target)

    assert not report.ok and report.http_status == 500
    assert "HTTP 500" in report.message and "demo_rag --error-rate" in report.message


def test_check_of_an_unreachable_target_says_so(make_target):
    report = target_check(make_target("http://127.0.0.1:9/query"))
    assert not report.ok and "ConnectError" in report.message


def test_check_target_command(demo_rag, make_target):
    make_target(demo_rag().url, name="rag")
    out = io.StringIO()

    call_command("check_target", "rag", "--query", "How much ARB did STIP allocate?", stdout=out)

    text = out.getvalue()
    assert text.startswith("ok: target 'rag' answered in")
    assert "answer: " in text and "retrieved_ids: " in text

    make_target("http://127.0.0.1:9/query", name="down")
    with pytest.raises(CommandError, match="ConnectError"):
        call_command("check_target", "down", stdout=io.StringIO())
    with pytest.raises(CommandError, match="no target named 'nope' \\(known: down, rag\\)"):
        call_command("check_target", "nope")


def test_create_target_from_options_and_from_json(tmp_path):
    call_command(
        "create_target", "--name", "rag", "--url", "http://127.0.0.1:8100/query",
        "--template", '{"query": "{{query}}"}', "--answer", "answer", "--contexts", "sources",
        "--header-env", "Authorization=RAG_TOKEN:Bearer {}", "--rpm", "120", stdout=io.StringIO(),
    )  # fmt: skip
    target = Target.objects.get(name="rag")
    assert target.headers == {"Authorization": {"env": "RAG_TOKEN", "format": "Bearer {}"}}
    assert target.response_mapping == {"answer": "answer", "contexts": "sources"}
    assert target.requests_per_minute == 120

    spec = tmp_path / "target.json"
    spec.write_text(
        json.dumps({"name": "rag2", "url": "http://127.0.0.1:8100/query", "response_mapping": {"answer": "answer"}})
    )
    call_command("create_target", "--json", str(spec), stdout=io.StringIO())
    assert Target.objects.filter(name="rag2").exists()

    call_command("create_target", "--json", str(spec), "--update", "--max-concurrency", "2", stdout=io.StringIO())
    assert Target.objects.get(name="rag2").max_concurrency == 2

    with pytest.raises(CommandError, match="response_mapping: answer: `a..b` is not a valid JMESPath"):
        call_command("create_target", "--name", "bad", "--url", "http://x/q", "--answer", "a..b")
    with pytest.raises(CommandError, match="--json: unknown field 'answer'"):
        spec.write_text(json.dumps({"name": "x", "answer": "a"}))
        call_command("create_target", "--json", str(spec))
