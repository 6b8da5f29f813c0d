"""Property-based fuzzing of every operation in the live schema (schemathesis + hypothesis, bounded):
no 5xx, every status documented, every body as the schema says. Runs in the normal test run."""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from api.services import token_create
from bench.seed_review import seed_finished_run

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
MAX_EXAMPLES = 6  # per operation: ~25 operations in about a minute on a loaded 2-core box


@pytest.fixture
def api_key(transactional_db, make_user) -> str:
    # Something real to find: a finished run with claims, its dataset and judge, and an admin (every write allowed).
    seed_finished_run(items=3, claims=2, name="fuzz")
    return token_create(user=make_user("fuzzer", role="admin")).key


@pytest.fixture
def api_schema(live_server, api_key):
    return schemathesis.openapi.from_url(
        f"{live_server.url}/api/schema/?format=json", headers={"Authorization": f"Token {api_key}"}
    )


schema = schemathesis.pytest.from_fixture("api_schema")


@pytest.mark.slow
@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
def test_the_api_honours_its_schema(case, api_key, live_server) -> None:
    case.call_and_validate(
        base_url=f"{live_server.url}", headers={"Authorization": f"Token {api_key}"}, checks=CHECKS
    )
