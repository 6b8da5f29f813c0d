"""Writes of the targets app: targets (create, update, validate) and the per-item snapshots of their answers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from targets import client, mapping, templating
from targets.client import ENV_NAME, CallResult, TargetConfig, TargetError
from targets.models import Method, SnapshotStatus, Target, TargetSnapshot

EDITABLE_FIELDS = (
    "url",
    "method",
    "headers",
    "request_template",
    "response_mapping",
    "timeout_seconds",
    "max_concurrency",
    "requests_per_minute",
)
DEMO_TARGET_NAME = "demo-rag"
DEMO_TEMPLATE = {"query": "{{query}}", "id": "{{id}}", "top_k": 3}
DEMO_MAPPING = {"answer": "answer", "contexts": "sources", "retrieved_ids": "sources[].id"}


@transaction.atomic
def target_create(
    *,
    name: str,
    url: str,
    method: str = Method.POST,
    headers: dict[str, Any] | None = None,
    request_template: Any = None,
    response_mapping: dict[str, str] | None = None,
    timeout_seconds: float = 30.0,
    max_concurrency: int = 4,
    requests_per_minute: int | None = None,
) -> Target:
    """Create a target; ValidationError keyed by field name (`url`, `headers`, `response_mapping`, ...)."""
    target = Target(
        name=name,
        url=url,
        method=method,
        headers=headers if headers is not None else {},
        request_template=request_template if request_template is not None else {"query": "{{query}}"},
        response_mapping=response_mapping if response_mapping is not None else {},
        timeout_seconds=timeout_seconds,
        max_concurrency=max_concurrency,
        requests_per_minute=requests_per_minute,
    )
    target_validate(target)
    try:
        with transaction.atomic():
            target.save()
    except IntegrityError:
        raise ValidationError({"name": f"a target named {name!r} already exists"}) from None
    return target


@transaction.atomic
def target_update(*, target: Target, **changes: Any) -> Target:
    """Change some fields (names in EDITABLE_FIELDS); validates the result. Past runs keep their snapshots."""
    unknown = set(changes) - set(EDITABLE_FIELDS)
    if unknown:
        raise ValidationError({field: "cannot be changed" for field in sorted(unknown)})
    for field, value in changes.items():
        setattr(target, field, value)
    target_validate(target)
    target.save()
    return target


def target_validate(target: Target) -> None:
    """Model validation plus the target's own rules; errors keyed by field name, messages say what to give."""
    errors: dict[str, list[str]] = {}
    try:
        target.full_clean(exclude=["headers", "request_template", "response_mapping"], validate_unique=False)
    except ValidationError as exc:
        errors.update(exc.message_dict)

    def add(field: str, message: str) -> None:
        errors.setdefault(field, []).append(message)

    parts = urlsplit(target.url or "")
    if target.url and (parts.scheme not in ("http", "https") or not parts.netloc):
        add("url", f"{target.url!r} is not an http(s) URL such as http://127.0.0.1:8100/query")
    for problem in _header_problems(target.headers):
        add("headers", problem)
    try:
        templating.placeholders_check(target.request_template)
    except templating.TemplateError as exc:
        add("request_template", str(exc))
    if target.method == Method.GET and not isinstance(target.request_template, dict | type(None)):
        add("request_template", "a GET target's template must be an object: its entries become the query string")
    try:
        mapping.mapping_check(target.response_mapping)
    except mapping.MappingError as exc:
        add("response_mapping", str(exc))
    if target.timeout_seconds is not None and target.timeout_seconds <= 0:
        add("timeout_seconds", "must be more than 0")
    if target.requests_per_minute == 0:
        add("requests_per_minute", "must be at least 1 (leave it empty for no limit)")
    if errors:
        raise ValidationError(errors)


def _header_problems(headers: Any) -> list[str]:
    if not isinstance(headers, dict):
        return ['must be a JSON object such as {"Authorization": {"env": "RAG_TOKEN", "format": "Bearer {}"}}']
    problems = []
    for name, spec in headers.items():
        if isinstance(spec, dict):
            unknown = set(spec) - {"env", "format"}
            if unknown or not isinstance(spec.get("env"), str) or not ENV_NAME.match(spec["env"]):
                # Not echoed: a mistyped value is often the secret itself.
                problems.append(
                    f"{name}: give the *name* of the environment variable holding the secret, "
                    f'e.g. {{"env": "RAG_TOKEN", "format": "Bearer {{}}"}}'
                )
            elif "format" in spec and (not isinstance(spec["format"], str) or "{}" not in spec["format"]):
                problems.append(f'{name}: format must be a string with {{}} where the secret goes, e.g. "Bearer {{}}"')
        elif not isinstance(spec, str):
            problems.append(f'{name}: a value is a string, or {{"env": "VARIABLE"}} for a secret')
        elif name.lower() in ("authorization", "x-api-key", "api-key") and spec:
            problems.append(
                f'{name}: secret headers are read from the environment, never stored: {{"env": "RAG_TOKEN"}}'
            )
    return problems


def target_config_snapshot(target: Target) -> dict[str, Any]:
    """The target's configuration as a run stores it (what past runs called; no secret in it)."""
    return TargetConfig.of(target).as_dict()


def target_demo_ensure(*, url: str) -> Target:
    """The demo target (python -m evalsite.demo_rag), created once; its URL follows `url`."""
    target = Target.objects.filter(name=DEMO_TARGET_NAME).first()
    if target is None:
        return target_create(
            name=DEMO_TARGET_NAME,
            url=url,
            request_template=DEMO_TEMPLATE,
            response_mapping=DEMO_MAPPING,
            timeout_seconds=10.0,
            max_concurrency=4,
        )
    if target.url != url:
        target_update(target=target, url=url)
    return target


# --- Snapshots ------------------------------------------------------------------------------


def snapshot_record_success(*, item_id: int, result: CallResult) -> TargetSnapshot:
    extracted = result.extracted
    return _snapshot_insert(
        TargetSnapshot(
            item_id=item_id,
            status=SnapshotStatus.OK,
            answer=extracted.answer,
            contexts=extracted.contexts,
            retrieved_ids=extracted.retrieved_ids,
            latency_ms=result.latency_ms,
            http_status=result.http_status,
            attempts=result.attempts,
            request=result.request,
            raw_body=result.raw_body,
        )
    )


def snapshot_record_error(*, item_id: int, error: TargetError, request: dict[str, Any]) -> TargetSnapshot:
    return _snapshot_insert(
        TargetSnapshot(
            item_id=item_id,
            status=SnapshotStatus.ERROR,
            error=str(error)[:4000],
            latency_ms=error.latency_ms,
            http_status=error.http_status,
            attempts=error.attempts,
            request=request,
            raw_body=error.body[:100_000],
        )
    )


def _snapshot_insert(snapshot: TargetSnapshot) -> TargetSnapshot:
    """Insert once: when a duplicate execution stored one first, that one stands (and is returned)."""
    try:
        with transaction.atomic():
            snapshot.save(force_insert=True)
    except IntegrityError:
        return TargetSnapshot.objects.get(item_id=snapshot.item_id)
    return snapshot


def snapshots_discard_errors(*, item_ids: list[int]) -> int:
    """Forget the failed snapshots of items about to be re-run, so the target is asked again."""
    deleted, _ = TargetSnapshot.objects.filter(item_id__in=item_ids, status=SnapshotStatus.ERROR).delete()
    return deleted


def snapshot_take(
    *, item_id: int, example: Any, config: TargetConfig, should_stop: Callable[[], bool] | None = None
) -> TargetSnapshot:
    """The item's snapshot: the stored one if there is one (a re-delivery never calls the target again),
    else one call of the target (retried within its limits), stored whether it answered or failed."""
    existing = TargetSnapshot.objects.filter(item_id=item_id).first()
    if existing is not None:
        return existing
    fields = templating.example_fields(example)
    try:
        result = client.call(config, fields, should_stop=should_stop)
    except TargetError as exc:
        try:
            body = templating.render(config.request_template, fields)
        except templating.TemplateError:
            body = None
        return snapshot_record_error(item_id=item_id, error=exc, request=client.request_record(config, body))
    return snapshot_record_success(item_id=item_id, result=result)
