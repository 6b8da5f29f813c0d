"""Property-based fuzzing of every operation in the live schema (schemathesis + hypothesis, bounded):
no 5xx, every status documented, every body as the schema says. Runs in the normal test run.

One test walks the operations itself (schemathesis' pytest plugin does not run on this pytest):
each operation gets MAX_EXAMPLES generated requests, derandomized so a failure reproduces.
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from api.services import token_create
from bench.seed_review import seed_finished_run
from targets.services import target_create

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
MAX_EXAMPLES = 12  # per operation: ~25 operations in well under a minute on a loaded 2-core box

pytestmark = pytest.mark.slow


def test_the_api_honours_its_schema(live_server, transactional_db, make_user) -> None:
    # Something real to find: a finished run with claims, its dataset and judge, and an admin (every write allowed).
    seed_finished_run(items=3, claims=2, name="fuzz")
    # a target to read, change and check (nothing listens on the discard port: a check fails fast)
    target_create(
        name="fuzz-rag", url="http://127.0.0.1:9/query", response_mapping={"answer": "answer"}, timeout_seconds=1
    )
    auth = {"Authorization": f"Token {token_create(user=make_user('fuzzer', role='admin')).key}"}
    schema = schemathesis.openapi.from_url(f"{live_server.url}/api/schema/?format=json", headers=auth)
    failures: list[str] = []
    operations = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        operations += 1

        @given(case=operation.as_strategy())
        @settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
        def fuzz(case) -> None:
            case.call_and_validate(base_url=live_server.url, headers=auth, checks=CHECKS)

        try:
            fuzz()
        except Exception as exc:  # every operation is tried; the failures are listed together
            failures.append(f"{operation.method.upper()} {operation.path}: {exc}"[:3000])
    assert operations >= 20
    assert not failures, "\n\n".join(failures)
