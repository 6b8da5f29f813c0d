"""The OpenAPI document and its two readers: real bodies everywhere, docs served from our own files."""

from __future__ import annotations

import re

import pytest
from django.contrib.staticfiles import finders
from django.test import Client

from tests.api.conftest import assert_error

# sqlite: the API also works on the embedded default (make test's second pass).
pytestmark = [pytest.mark.django_db, pytest.mark.sqlite]


def schema(client) -> dict:
    response = client.get("/api/schema/?format=json")
    assert response.status_code == 200, response.content[:300]
    return response.json()


def test_the_schema_describes_every_contract_path_with_real_bodies(viewer_api) -> None:
    document = schema(viewer_api)
    assert document["openapi"].startswith("3.")
    paths = set(document["paths"])
    for path in [
        "/api/datasets/",
        "/api/datasets/{id}/",
        "/api/datasets/{id}/versions/",
        "/api/datasets/{id}/versions/{number}/examples/",
        "/api/judges/",
        "/api/judges/{id}/",
        "/api/judges/{id}/check/",
        "/api/judges/agreement/",
        "/api/runs/",
        "/api/runs/{run_id}/",
        "/api/runs/{run_id}/cancel/",
        "/api/runs/{run_id}/resume/",
        "/api/runs/{run_id}/rerun-failed/",
        "/api/runs/{run_id}/items/",
        "/api/runs/{run_id}/items/{item_id}/",
        "/api/runs/{run_id}/gate/",
        "/api/claims/{claim_id}/override/",
        "/api/claims/{claim_id}/confirm/",
        "/api/compare/",
    ]:
        assert path in paths, path
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            if method == "parameters":
                continue
            for status, response in operation["responses"].items():
                content = response.get("content", {})
                assert content, f"{method} {path} {status} has no body"
                for body in content.values():
                    assert body.get("schema"), f"{method} {path} {status}: empty schema"
    for name, component in document["components"]["schemas"].items():
        assert component.get("properties") or component.get("enum") or component.get("oneOf"), name
    assert document["components"]["securitySchemes"]["tokenAuth"]["name"] == "Authorization"
    create = document["paths"]["/api/runs/"]["post"]
    assert "Idempotency-Key" in [p["name"] for p in create["parameters"]]
    assert "422" in create["responses"] and "413" in document["paths"]["/api/datasets/"]["post"]["responses"]


@pytest.mark.parametrize("url, asset", [("/api/docs/", "swagger-ui-bundle.js"), ("/api/redoc/", "redoc.standalone.js")])
def test_docs_pages_load_only_local_files(make_user, url, asset) -> None:
    browser = Client()
    browser.force_login(make_user("vic", role="viewer"))
    response = browser.get(url)
    assert "default-src 'self'" in response["Content-Security-Policy"]
    html = response.content.decode()
    assert asset in html
    external = re.findall(r"""(?:src|href)=["'](?:https?:)?//[^"']+""", html)
    assert not external, external
    assert "cdn" not in html.lower()
    for path in re.findall(r"/static/(drf_spectacular_sidecar/[^\"']+)", html):
        assert finders.find(path), path


@pytest.mark.parametrize("url", ["/api/docs/", "/api/redoc/"])
def test_docs_pages_are_401_for_anonymous_requests_like_every_api_url(url) -> None:
    assert_error(Client().get(url), 401, "not_authenticated")
