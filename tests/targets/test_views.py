from __future__ import annotations

import json

import pytest
from django.urls import reverse

from targets.models import Target

pytestmark = pytest.mark.django_db


def login(client, make_user, role: str | None):
    client.force_login(make_user(role or "viewer", role=role))
    return client


def form_data(**changes):
    data = {
        "name": "rag",
        "url": "http://127.0.0.1:8100/query",
        "method": "POST",
        "headers": json.dumps({"Authorization": {"env": "RAG_TOKEN", "format": "Bearer {}"}}),
        "request_template": json.dumps({"query": "{{query}}", "id": "{{id}}"}),
        "answer": "answer",
        "contexts": "sources",
        "retrieved_ids": "",
        "timeout_seconds": "10",
        "max_concurrency": "4",
        "requests_per_minute": "",
    }
    return data | changes


def test_pages_need_login(client):
    assert client.get(reverse("targets:list"))["Location"].startswith("/login/")


def test_a_viewer_reads_the_list_and_the_page_but_cannot_edit_or_check(client, make_user, make_target):
    target = make_target("http://127.0.0.1:9/query", name="rag", headers={"Authorization": {"env": "RAG_TOKEN"}})
    client = login(client, make_user, None)

    listing = client.get(reverse("targets:list")).content.decode()
    detail = client.get(reverse("targets:detail", args=[target.pk])).content.decode()

    assert "rag" in listing and "http://127.0.0.1:9/query" in listing and "New target" not in listing
    assert "from $RAG_TOKEN" in detail and "Edit" not in detail and "needs the reviewer role" in detail
    assert client.get(reverse("targets:create")).status_code == 403
    assert client.get(reverse("targets:edit", args=[target.pk])).status_code == 403
    assert client.post(reverse("targets:check", args=[target.pk])).status_code == 403
    assert client.get(reverse("targets:detail", args=[999])).status_code == 404


def test_the_nav_links_the_targets_page(client, make_user):
    html = login(client, make_user, None).get(reverse("targets:list")).content.decode()
    assert '<a href="/targets/" aria-current="page">Targets</a>' in html


def test_an_admin_creates_a_target(client, make_user):
    response = login(client, make_user, "admin").post(reverse("targets:create"), form_data())

    target = Target.objects.get(name="rag")
    assert response.status_code == 302 and response["Location"] == reverse("targets:detail", args=[target.pk])
    assert target.headers == {"Authorization": {"env": "RAG_TOKEN", "format": "Bearer {}"}}
    assert target.response_mapping == {"answer": "answer", "contexts": "sources"}
    assert target.request_template == {"query": "{{query}}", "id": "{{id}}"}


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"answer": "a..b"}, "answer", "is not a valid JMESPath expression"),
        ({"answer": ""}, "answer", "This field is required"),
        ({"contexts": "[["}, "contexts", "is not a valid JMESPath expression"),
        ({"request_template": "{not json"}, "request_template", "not valid JSON"),
        ({"request_template": '{"q": "{{question}}"}'}, "request_template", "unknown placeholder"),
        ({"headers": '{"Authorization": "Bearer sk-123"}'}, "headers", "never stored"),
        ({"url": "localhost:8100"}, "url", "is not an http(s) URL"),
        ({"timeout_seconds": "0"}, "timeout_seconds", "more than 0"),
    ],
)
def test_the_form_shows_each_error_next_to_its_field(client, make_user, changes, field, message):
    response = login(client, make_user, "admin").post(reverse("targets:create"), form_data(**changes))

    assert response.status_code == 200
    errors = response.context["form"].errors
    assert field in errors, errors
    assert message in " ".join(errors[field])
    assert not Target.objects.exists()


def test_an_admin_edits_a_target_but_not_its_name(client, make_user, make_target):
    target = make_target("http://127.0.0.1:9/query", name="rag")
    response = login(client, make_user, "admin").post(
        reverse("targets:edit", args=[target.pk]), form_data(name="renamed", url="http://127.0.0.1:8101/query")
    )
    assert response.status_code == 302
    target.refresh_from_db()
    assert (target.name, target.url) == ("rag", "http://127.0.0.1:8101/query")


@pytest.mark.slow
def test_the_check_button_shows_what_each_mapping_extracted(client, make_user, make_target, demo_rag):
    target = make_target(demo_rag().url, name="rag")
    client = login(client, make_user, "reviewer")

    response = client.post(
        reverse("targets:check", args=[target.pk]), {"query": "How much ARB did STIP allocate?"}, HTTP_HX_REQUEST="true"
    )

    html = response.content.decode()
    assert response.status_code == 200 and "<html" not in html
    assert "OK" in html and "HTTP 200" in html and "stip-forum" in html
    assert "How much ARB did STIP allocate?" in html


@pytest.mark.slow
def test_the_check_shows_the_mapping_that_found_nothing_and_the_body(client, make_user, make_target, demo_rag):
    target = make_target(demo_rag().url, name="rag", response_mapping={"answer": "result.text"})

    html = login(client, make_user, "reviewer").post(reverse("targets:check", args=[target.pk])).content.decode()

    assert "Failed" in html and "HTTP 200" in html
    assert "mapping answer: `result.text` found nothing in the response" in html
    assert '<span class="mapping-failed">answer</span>' in html
    assert '<details class="raw" open>' in html and "&quot;sources&quot;" in html


def test_the_admin_lists_creates_and_shows_snapshots(admin_client, make_target):
    target = make_target("http://127.0.0.1:9/query", name="rag")

    assert admin_client.get("/admin/targets/target/").status_code == 200
    assert admin_client.get(f"/admin/targets/target/{target.pk}/change/").status_code == 200
    assert admin_client.get("/admin/targets/targetsnapshot/").status_code == 200
    response = admin_client.post("/admin/targets/target/add/", form_data(name="rag2"))

    assert response.status_code == 302, response.context["adminform"].form.errors
    assert Target.objects.get(name="rag2").response_mapping == {"answer": "answer", "contexts": "sources"}
