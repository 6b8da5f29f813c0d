"""Request and response bodies. Outputs read what the selectors return; inputs only parse and check types:
the services validate the rest (and their errors come back naming the field)."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from api.models import CallbackStatus
from api.schema import AGGREGATES_SCHEMA, JSON_OBJECT_SCHEMA, JSON_VALUE_SCHEMA, TARGET_HEADERS_SCHEMA
from datasets.parsing import FORMATS
from evaluations.models import ItemStatus, RunStatus, Verdict
from evaluations.reports import summary_rows
from judges.models import Provider
from judges.services import EDITABLE_FIELDS
from targets.models import Method, SnapshotStatus
from targets.services import EDITABLE_FIELDS as TARGET_EDITABLE_FIELDS


@extend_schema_field(AGGREGATES_SCHEMA)
class AggregatesField(serializers.JSONField):
    pass


@extend_schema_field(JSON_OBJECT_SCHEMA)
class JsonObjectField(serializers.JSONField):
    pass


@extend_schema_field(JSON_VALUE_SCHEMA)
class JsonValueField(serializers.JSONField):
    pass


@extend_schema_field({"oneOf": [{"type": "integer"}, {"type": "string"}], "description": "An id or a name."})
class IdOrNameField(serializers.Field):
    default_error_messages = {"invalid": "Give an id (a number) or a name (a string)."}

    def to_internal_value(self, data: Any) -> int | str:
        if isinstance(data, bool) or not isinstance(data, int | str):
            self.fail("invalid")
        if isinstance(data, str):
            data = data.strip()
            if not data:
                self.fail("invalid")
            return int(data) if data.isdigit() else data
        return data

    def to_representation(self, value: Any) -> Any:
        return value


def absolute(context: dict[str, Any], path: str) -> str:
    """`path` on the server the request came to (or the callback's stored base URL)."""
    return f"{context.get('base_url', '')}{path}"


# --- Datasets ----------------------------------------------------------------------------------


class DatasetVersionSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    number = serializers.IntegerField()
    item_count = serializers.IntegerField()
    content_sha256 = serializers.CharField()
    source_filename = serializers.CharField()
    source_format = serializers.CharField()
    created_at = serializers.DateTimeField()
    created_by = serializers.CharField(source="created_by.username", allow_null=True, default=None)


class DatasetSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    description = serializers.CharField()
    created_at = serializers.DateTimeField()
    latest_version = serializers.IntegerField(source="latest_number", allow_null=True)
    latest_item_count = serializers.IntegerField(allow_null=True)
    updated_at = serializers.DateTimeField(allow_null=True)


class DatasetDetailSerializer(DatasetSerializer):
    versions = DatasetVersionSerializer(many=True)


class DatasetUploadFileSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200, help_text="An existing name adds a new version to that dataset.")
    file = serializers.FileField(help_text="JSONL, a JSON array or CSV, in UTF-8.")
    format = serializers.ChoiceField(choices=FORMATS, required=False, help_text="Default: from the file's extension.")


class DatasetUploadJsonSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    items = serializers.ListField(
        child=JsonObjectField(), allow_empty=True, help_text="Dataset items, as in a JSON array file."
    )


class DatasetUploadResultSerializer(serializers.Serializer):
    created = serializers.BooleanField(help_text="False: the content is identical to an existing version.")
    dataset = DatasetSerializer()
    version = DatasetVersionSerializer()


class ContextSerializer(serializers.Serializer):
    id = serializers.CharField()
    text = serializers.CharField()
    score = serializers.FloatField(required=False, allow_null=True)
    metadata = JsonObjectField(required=False)


class ExampleSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    position = serializers.IntegerField()
    external_id = serializers.CharField()
    query = serializers.CharField()
    response = serializers.CharField()
    contexts = ContextSerializer(many=True)
    reference_answer = serializers.CharField()
    expected_context_ids = serializers.ListField(child=serializers.CharField())
    retrieved_ids = serializers.ListField(child=serializers.CharField(), allow_null=True)
    tags = serializers.ListField(child=serializers.CharField())
    metadata = JsonObjectField()


# --- Judges ------------------------------------------------------------------------------------


class JudgeSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    provider = serializers.ChoiceField(choices=Provider.choices)
    model = serializers.CharField()
    base_url = serializers.CharField()
    api_key_env = serializers.CharField(help_text="The name of the environment variable holding the key.")
    temperature = serializers.FloatField()
    max_tokens = serializers.IntegerField()
    timeout_seconds = serializers.FloatField()
    max_concurrency = serializers.IntegerField()
    requests_per_minute = serializers.IntegerField(allow_null=True)
    tokens_per_minute = serializers.IntegerField(allow_null=True)
    input_price_per_million = serializers.DecimalField(max_digits=10, decimal_places=4, coerce_to_string=False)
    output_price_per_million = serializers.DecimalField(max_digits=10, decimal_places=4, coerce_to_string=False)
    is_heuristic = serializers.BooleanField()
    spend = serializers.DecimalField(max_digits=14, decimal_places=6, coerce_to_string=False)
    call_count = serializers.IntegerField()
    tokens = serializers.IntegerField()
    created_at = serializers.DateTimeField()


class ConfigInputSerializer(serializers.Serializer):
    """Creating (every required field) or changing (PATCH: any but the name) a named configuration:
    an unknown field is a 400 naming it (`refused`: with its own message), and so is a new name."""

    editable_fields: tuple[str, ...] = ()
    refused: dict[str, str] = {}

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            for name in unknown:
                if name in self.refused:
                    raise serializers.ValidationError({name: [self.refused[name]]})
            if unknown:
                raise serializers.ValidationError({name: ["unknown field"] for name in unknown})
        return super().to_internal_value(data)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if self.partial and "name" in attrs:
            raise serializers.ValidationError({"name": ["cannot be changed"]})
        return attrs

    def changes(self, attrs: dict[str, Any]) -> dict[str, Any]:
        return {field: value for field, value in attrs.items() if field in self.editable_fields}


class JudgeInputSerializer(ConfigInputSerializer):
    """Creating (every required field) or changing (PATCH: any of them) a judge. Never the key itself."""

    editable_fields = EDITABLE_FIELDS
    refused = {"api_key": "is never accepted: set api_key_env to the name of the variable that holds the key"}

    name = serializers.CharField(max_length=100)
    provider = serializers.ChoiceField(choices=Provider.choices)
    model = serializers.CharField(max_length=200)
    base_url = serializers.CharField(required=False, allow_blank=True, max_length=200)
    api_key_env = serializers.CharField(required=False, allow_blank=True, max_length=100)
    temperature = serializers.FloatField(required=False)
    max_tokens = serializers.IntegerField(required=False, min_value=1, max_value=2_000_000)
    timeout_seconds = serializers.FloatField(required=False)
    max_concurrency = serializers.IntegerField(required=False, min_value=0, max_value=100_000)
    requests_per_minute = serializers.IntegerField(required=False, allow_null=True, min_value=0, max_value=2**31 - 1)
    tokens_per_minute = serializers.IntegerField(required=False, allow_null=True, min_value=0, max_value=2**31 - 1)
    input_price_per_million = serializers.DecimalField(max_digits=10, decimal_places=4, required=False)
    output_price_per_million = serializers.DecimalField(max_digits=10, decimal_places=4, required=False)


class JudgeCheckSerializer(serializers.Serializer):
    ok = serializers.BooleanField()
    message = serializers.CharField()
    latency_ms = serializers.IntegerField(allow_null=True)


# --- Live targets ------------------------------------------------------------------------------


@extend_schema_field(TARGET_HEADERS_SCHEMA)
class TargetHeadersField(serializers.JSONField):
    pass


def _has_nul(value: Any) -> bool:
    """A NUL character anywhere in a JSON value (PostgreSQL's jsonb cannot store one)."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(key) or _has_nul(item) for key, item in value.items())
    if isinstance(value, list):
        return any(_has_nul(item) for item in value)
    return False


class TargetSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    url = serializers.CharField()
    method = serializers.ChoiceField(choices=Method.choices)
    headers = TargetHeadersField(help_text="Secret values appear only as the name of their environment variable.")
    request_template = JsonValueField(help_text="JSON with {{query}}, {{id}}, {{metadata.x}}, ... placeholders.")
    response_mapping = serializers.DictField(
        child=serializers.CharField(), help_text="JMESPath per key: answer, contexts, retrieved_ids."
    )
    timeout_seconds = serializers.FloatField()
    max_concurrency = serializers.IntegerField(help_text="Calls in flight at once, across all workers (0: no limit).")
    requests_per_minute = serializers.IntegerField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    api_url = serializers.SerializerMethodField(help_text="This target in the API.")
    web_url = serializers.SerializerMethodField(help_text="The target page.")

    def get_api_url(self, target: Any) -> str:
        return absolute(self.context, reverse("api:target-detail", args=[target.pk]))

    def get_web_url(self, target: Any) -> str:
        return absolute(self.context, reverse("targets:detail", args=[target.pk]))


class TargetInputSerializer(ConfigInputSerializer):
    """Creating (name and url required) or changing (PATCH: any field but the name) a target.
    The service validates the rest (URL, headers, template, mapping) and its errors name the field."""

    editable_fields = TARGET_EDITABLE_FIELDS

    name = serializers.CharField(max_length=100)
    url = serializers.CharField(max_length=500)
    method = serializers.ChoiceField(choices=Method.choices, required=False)
    headers = TargetHeadersField(
        required=False,
        help_text='A secret header names its variable: {"Authorization": {"env": "RAG_TOKEN", "format": "Bearer {}"}}; '
        "a literal value for Authorization or an API-key header is refused.",
    )
    request_template = JsonValueField(required=False, help_text='Default: {"query": "{{query}}"}.')
    response_mapping = JsonObjectField(
        required=False, help_text='JMESPath per key, e.g. {"answer": "answer", "contexts": "sources"}.'
    )
    timeout_seconds = serializers.FloatField(required=False, max_value=3600)
    max_concurrency = serializers.IntegerField(required=False, min_value=0, max_value=100_000)
    requests_per_minute = serializers.IntegerField(required=False, allow_null=True, min_value=1, max_value=2**31 - 1)

    def to_internal_value(self, data: Any) -> Any:
        attrs = super().to_internal_value(data)
        nul = [name for name in ("headers", "request_template", "response_mapping") if _has_nul(attrs.get(name))]
        if nul:
            raise serializers.ValidationError({name: ["must not contain a NUL character"] for name in nul})
        return attrs


class TargetCheckInputSerializer(serializers.Serializer):
    query = serializers.CharField(
        required=False, allow_blank=True, max_length=5000, help_text="Default: a question about the demo dataset."
    )


class TargetContextSerializer(serializers.Serializer):
    id = serializers.CharField()
    text = serializers.CharField(allow_blank=True)
    score = serializers.FloatField(required=False, allow_null=True)


class TargetExtractedSerializer(serializers.Serializer):
    answer = serializers.CharField(allow_blank=True)
    contexts = TargetContextSerializer(many=True)
    retrieved_ids = serializers.ListField(child=serializers.CharField(), help_text="In rank order.")


CHECK_BODY_CHARS = 10_000


class TargetCheckSerializer(serializers.Serializer):
    """targets.check.CheckReport: what each mapping extracted, or the exact error."""

    ok = serializers.BooleanField()
    message = serializers.CharField(help_text="One line: the answer's latency and status, or the exact error.")
    query = serializers.CharField()
    http_status = serializers.IntegerField(allow_null=True)
    latency_ms = serializers.IntegerField(allow_null=True)
    failed_mapping = serializers.CharField(
        help_text="The mapping key that found nothing or the wrong shape ('' if none)."
    )
    extracted = serializers.SerializerMethodField()
    found = serializers.DictField(
        child=serializers.CharField(), help_text="Each mapping expression's raw result, as JSON text."
    )
    body = serializers.SerializerMethodField(
        help_text=f"The body the target sent (its first {CHECK_BODY_CHARS} characters)."
    )
    body_truncated = serializers.SerializerMethodField()
    request = JsonObjectField(help_text="What was sent: method, URL, body; header names only, never a secret.")

    @extend_schema_field(TargetExtractedSerializer(allow_null=True))
    def get_extracted(self, report: Any) -> dict[str, Any] | None:
        return TargetExtractedSerializer(report.extracted).data if report.ok else None

    def get_body(self, report: Any) -> str:
        return report.body[:CHECK_BODY_CHARS]

    def get_body_truncated(self, report: Any) -> bool:
        return len(report.body) > CHECK_BODY_CHARS


class TargetSnapshotSerializer(serializers.Serializer):
    """What the target returned for one item (stored once: later edits of the target do not change it)."""

    status = serializers.ChoiceField(choices=SnapshotStatus.choices)
    error = serializers.CharField(allow_blank=True)
    answer = serializers.CharField(allow_blank=True)
    contexts = TargetContextSerializer(many=True)
    retrieved_ids = serializers.ListField(child=serializers.CharField(), help_text="In rank order.")
    latency_ms = serializers.IntegerField(allow_null=True)
    http_status = serializers.IntegerField(allow_null=True)
    attempts = serializers.IntegerField()
    request = JsonObjectField(help_text="What was sent: method, URL, body; header names only.")
    raw_body = serializers.CharField(allow_blank=True, help_text="The body the target sent, as received.")
    created_at = serializers.DateTimeField()


class RunTargetSerializer(serializers.Serializer):
    """A run's live target as the run called it (null: the dataset's stored answers were scored)."""

    id = serializers.IntegerField(allow_null=True, help_text="null when the target was deleted since.")
    name = serializers.CharField()
    url = serializers.CharField()


def run_target(run: Any) -> dict[str, Any] | None:
    config = run.target_config or {}
    if not config:
        return None
    return RunTargetSerializer({"id": run.target_id, "name": config.get("name", ""), "url": config.get("url", "")}).data


# --- Human-calibrated scores (evaluations.audit_estimates) ---------------------------------------


class MeanIntervalSerializer(serializers.Serializer):
    mean = serializers.FloatField()
    ci_low = serializers.FloatField()
    ci_high = serializers.FloatField()
    std_error = serializers.FloatField()


class CalibratedMeanSerializer(MeanIntervalSerializer):
    method = serializers.CharField(help_text="ppi++ (power-tuned) or ppi.")
    lam = serializers.FloatField(required=False, help_text="PPI++'s λ (ppi++ only).")


# The output key is `lambda`, a Python keyword: rename the declared field.
CalibratedMeanSerializer._declared_fields["lambda"] = CalibratedMeanSerializer._declared_fields.pop("lam")


class MeanSerializer(serializers.Serializer):
    mean = serializers.FloatField()


class CalibrationEstimateSerializer(serializers.Serializer):
    key = serializers.CharField()
    label = serializers.CharField()
    kind = serializers.CharField()
    n_items = serializers.IntegerField(help_text="Scored items of the run (the judge's figure).")
    n_audited = serializers.IntegerField(help_text="Audited items (the people's figure).")
    judge = MeanSerializer(help_text="The judge's mean over all items.")
    judge_on_audit = MeanSerializer()
    bias = serializers.FloatField(help_text="Mean of judge − people on the audit.")
    human = MeanIntervalSerializer(help_text="People only, over the audited items.")
    calibrated = CalibratedMeanSerializer(help_text="Prediction-powered (PPI++) mean and 95% interval.")
    ppi = CalibratedMeanSerializer()


class AuditRefSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    size = serializers.IntegerField()
    drawn = serializers.IntegerField()
    audited = serializers.IntegerField()
    seed = serializers.IntegerField()
    population = serializers.IntegerField()
    created_at = serializers.CharField()
    created_by = serializers.CharField(allow_null=True)


class CalibrationSerializer(serializers.Serializer):
    """A run's human-calibrated scores: progress below `min_audited` audited items, figures from then on."""

    status = serializers.ChoiceField(choices=["in_progress", "calibrated"])
    min_audited = serializers.IntegerField()
    confidence = serializers.FloatField()
    audit = AuditRefSerializer()
    estimates = serializers.DictField(child=CalibrationEstimateSerializer(), help_text="By target key; {} in progress.")


class CalibratedDifferenceSerializer(serializers.Serializer):
    key = serializers.CharField()
    label = serializers.CharField()
    kind = serializers.CharField()
    base = CalibratedMeanSerializer()
    candidate = CalibratedMeanSerializer()
    delta = serializers.FloatField()
    ci_low = serializers.FloatField()
    ci_high = serializers.FloatField()
    std_error = serializers.FloatField()
    significant = serializers.BooleanField()


class CalibratedComparisonSerializer(serializers.Serializer):
    base = CalibrationSerializer()
    candidate = CalibrationSerializer()
    confidence = serializers.FloatField()
    metrics = serializers.DictField(child=CalibratedDifferenceSerializer())


# --- Runs --------------------------------------------------------------------------------------


class RunCreateSerializer(serializers.Serializer):
    """POST /api/runs/. Every field but `callback_url` is an argument of `run_create` once resolved
    (`run_create_kwargs`): a new optional argument is one more field here."""

    dataset = IdOrNameField(help_text="The dataset's id or name.")
    version = serializers.IntegerField(required=False, min_value=1, help_text="Default: the latest version.")
    judge = IdOrNameField(help_text="The judge config's id or name.")
    metrics = serializers.ListField(child=serializers.CharField(), allow_empty=False)
    settings = JsonObjectField(required=False, help_text='Run settings, e.g. {"repeats": 3}.')
    name = serializers.CharField(required=False, allow_blank=True, max_length=200)
    target = IdOrNameField(
        required=False,
        allow_null=True,
        help_text="A live target's id or name: each item's answer and contexts come from calling it.",
    )
    callback_url = serializers.CharField(
        required=False, max_length=2000, help_text="Receives one POST with the run's summary when it finishes."
    )
    API_ONLY = ("callback_url",)

    def validate_settings(self, value: Any) -> Any:
        if not isinstance(value, dict):
            raise serializers.ValidationError("must be an object")
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        from datasets.selectors import DatasetVersionNotFound, dataset_version_for
        from judges.selectors import judge_config_by_ref

        try:
            attrs["dataset_version"] = dataset_version_for(attrs.pop("dataset"), attrs.pop("version", None))
        except DatasetVersionNotFound as exc:
            raise serializers.ValidationError({"dataset": [str(exc)]}) from None
        judge = judge_config_by_ref(attrs["judge"])
        if judge is None:
            raise serializers.ValidationError({"judge": [f"unknown judge {attrs['judge']!r}"]})
        attrs["judge_config"] = judge
        del attrs["judge"]
        if attrs.get("target") is not None:
            from targets.selectors import target_get

            target = target_get(attrs["target"])
            if target is None:
                raise serializers.ValidationError({"target": [f"unknown target {attrs['target']!r}"]})
            attrs["target"] = target
        else:
            attrs.pop("target", None)
        return attrs

    def run_create_kwargs(self) -> dict[str, Any]:
        return {key: value for key, value in self.validated_data.items() if key not in self.API_ONLY}


class RunDatasetSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="dataset_version.dataset_id")
    name = serializers.CharField(source="dataset_version.dataset.name")
    version = serializers.IntegerField(source="dataset_version.number")
    version_id = serializers.IntegerField(source="dataset_version_id")


class RunJudgeSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="judge_config_id")
    name = serializers.CharField(source="judge_config.name")
    provider = serializers.CharField(source="judge_config.provider")
    model = serializers.CharField(source="judge_config.model")
    is_heuristic = serializers.BooleanField(source="judge_config.is_heuristic")


class RunSerializer(serializers.Serializer):
    """A run in a list."""

    id = serializers.IntegerField()
    name = serializers.CharField()
    status = serializers.ChoiceField(choices=RunStatus.choices)
    url = serializers.SerializerMethodField(help_text="This run in the API.")
    web_url = serializers.SerializerMethodField(help_text="The run page.")
    dataset = RunDatasetSerializer(source="*")
    judge = RunJudgeSerializer(source="*")
    target = serializers.SerializerMethodField()
    metrics = serializers.ListField(child=serializers.CharField())
    items_total = serializers.IntegerField()
    items_done = serializers.IntegerField()
    items_failed = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)

    def get_url(self, run: Any) -> str:
        return absolute(self.context, reverse("api:run-detail", args=[run.pk]))

    @extend_schema_field(RunTargetSerializer(allow_null=True))
    def get_target(self, run: Any) -> dict[str, Any] | None:
        return run_target(run)

    def get_web_url(self, run: Any) -> str:
        return absolute(self.context, reverse("evaluations:run_detail", args=[run.pk]))


class ProgressSerializer(serializers.Serializer):
    items_total = serializers.IntegerField()
    items_done = serializers.IntegerField()
    items_failed = serializers.IntegerField()
    items_finished = serializers.SerializerMethodField()
    reviewed = serializers.IntegerField(help_text="Finished items a person has reviewed.")
    to_review = serializers.IntegerField()

    def get_items_finished(self, data: dict[str, Any]) -> int:
        return data["items_done"] + data["items_failed"]


class UsageSerializer(serializers.Serializer):
    judge_calls = serializers.IntegerField()
    cache_hits = serializers.IntegerField()
    input_tokens = serializers.IntegerField()
    output_tokens = serializers.IntegerField()
    cost = serializers.DecimalField(max_digits=14, decimal_places=6, coerce_to_string=False)


class TimingsSerializer(serializers.Serializer):
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    wall_seconds = serializers.FloatField(allow_null=True)


class SummaryRowSerializer(serializers.Serializer):
    metric = serializers.CharField()
    mean = serializers.FloatField(allow_null=True)
    pass_rate = serializers.FloatField(allow_null=True)
    covered = serializers.IntegerField(allow_null=True)
    errored = serializers.IntegerField(allow_null=True)
    skipped = serializers.IntegerField(allow_null=True)


class CallbackSerializer(serializers.Serializer):
    url = serializers.CharField()
    status = serializers.ChoiceField(choices=CallbackStatus.choices)
    attempts = serializers.IntegerField()
    last_status_code = serializers.IntegerField(allow_null=True)
    last_error = serializers.CharField()
    last_attempt_at = serializers.DateTimeField(allow_null=True)
    delivered_at = serializers.DateTimeField(allow_null=True)


class RunDetailSerializer(RunSerializer):
    """One run: status, progress, aggregates, summary rows, tokens, cost, timings, its callback."""

    settings = JsonObjectField()
    error = serializers.CharField()
    created_by = serializers.CharField(source="created_by.username", allow_null=True, default=None)
    progress = serializers.SerializerMethodField()
    usage = UsageSerializer(source="*")
    timings = serializers.SerializerMethodField()
    summary = serializers.SerializerMethodField(help_text="One row per metric (then overall), as `evaluate` prints.")
    aggregates = AggregatesField()
    callback = serializers.SerializerMethodField()
    calibrated = serializers.SerializerMethodField(
        help_text="Human-calibrated scores from the run's audit (null: no audit); figures once 30 items are audited."
    )

    @extend_schema_field(ProgressSerializer)
    def get_progress(self, run: Any) -> dict[str, Any]:
        reviews = self.context.get("review_counts")
        data = {
            "items_total": run.items_total,
            "items_done": run.items_done,
            "items_failed": run.items_failed,
            "reviewed": reviews.reviewed if reviews else 0,
            "to_review": reviews.to_review if reviews else 0,
        }
        return ProgressSerializer(data).data

    @extend_schema_field(TimingsSerializer)
    def get_timings(self, run: Any) -> dict[str, Any]:
        wall = (run.aggregates or {}).get("wall_seconds")
        data = {"created_at": run.created_at, "started_at": run.started_at, "finished_at": run.finished_at}
        return TimingsSerializer(data | {"wall_seconds": wall}).data

    @extend_schema_field(SummaryRowSerializer(many=True))
    def get_summary(self, run: Any) -> list[dict[str, Any]]:
        return summary_rows(run.aggregates or {}, run.metrics)

    @extend_schema_field(CallbackSerializer(allow_null=True))
    def get_callback(self, run: Any) -> dict[str, Any] | None:
        callback = self.context.get("callback")
        return CallbackSerializer(callback).data if callback is not None else None

    @extend_schema_field(CalibrationSerializer(allow_null=True))
    def get_calibrated(self, run: Any) -> dict[str, Any] | None:
        calibration = self.context.get("calibration")
        return CalibrationSerializer(calibration).data if calibration is not None else None


# --- Items -------------------------------------------------------------------------------------


class ItemScoreSerializer(serializers.Serializer):
    metric = serializers.CharField()
    score = serializers.FloatField(allow_null=True)
    passed = serializers.BooleanField(allow_null=True)


class ItemRowSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    position = serializers.IntegerField()
    external_id = serializers.CharField()
    query = serializers.CharField()
    response = serializers.CharField()
    tags = serializers.ListField(child=serializers.CharField())
    status = serializers.ChoiceField(choices=ItemStatus.choices)
    error = serializers.CharField()
    overall = serializers.FloatField(allow_null=True)
    reviewed_at = serializers.DateTimeField(allow_null=True)
    scores = serializers.SerializerMethodField()
    verdicts = serializers.DictField(child=serializers.IntegerField(), help_text="Claims per current verdict.")
    url = serializers.SerializerMethodField()

    @extend_schema_field(ItemScoreSerializer(many=True))
    def get_scores(self, row: Any) -> list[dict[str, Any]]:
        return [
            {"metric": name, "score": result.score if result else None, "passed": result.passed if result else None}
            for name, result in row.scores.items()
        ]

    def get_url(self, row: Any) -> str:
        return absolute(self.context, reverse("api:run-item-detail", args=[self.context["run_id"], row.id]))


class MetricResultSerializer(serializers.Serializer):
    metric = serializers.CharField()
    score = serializers.FloatField(allow_null=True)
    passed = serializers.BooleanField(allow_null=True)
    threshold = serializers.FloatField(allow_null=True)
    feedback = serializers.CharField()
    details = JsonObjectField()
    raw_value = JsonValueField(allow_null=True)
    prompt_version = serializers.CharField()
    skipped_reason = serializers.CharField()


class ReviewEntrySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    old_verdict = serializers.ChoiceField(choices=Verdict.choices)
    new_verdict = serializers.ChoiceField(choices=Verdict.choices)
    reason = serializers.CharField()
    reviewer = serializers.CharField(source="reviewer.username", allow_null=True, default=None)
    created_at = serializers.DateTimeField()


class ClaimSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    position = serializers.IntegerField()
    text = serializers.CharField()
    judge_verdict = serializers.ChoiceField(choices=Verdict.choices)
    current_verdict = serializers.ChoiceField(choices=Verdict.choices)
    evidence = serializers.CharField()
    context_ids = serializers.ListField(child=serializers.CharField())
    reviewed_at = serializers.DateTimeField(allow_null=True)
    history = ReviewEntrySerializer(source="overrides.all", many=True, help_text="Reviews, newest first.")


class ItemContextSerializer(serializers.Serializer):
    id = serializers.CharField()
    text = serializers.CharField()
    score = serializers.FloatField(allow_null=True)
    cited = serializers.BooleanField()
    expected = serializers.BooleanField()
    claimed = serializers.BooleanField()


class AuditSentenceSerializer(serializers.Serializer):
    text = serializers.CharField()
    cited_ids = serializers.ListField(child=serializers.CharField())
    invalid_ids = serializers.ListField(child=serializers.CharField())
    trivial = serializers.BooleanField()


class CitationAuditSerializer(serializers.Serializer):
    hallucination_detected = serializers.BooleanField()
    cited_ids = serializers.ListField(child=serializers.CharField())
    invalid_ids = serializers.ListField(child=serializers.CharField())
    uncited_sentences = serializers.IntegerField()
    considered_sentences = serializers.IntegerField()
    sentences = AuditSentenceSerializer(many=True)


class JudgeCallSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    judge = serializers.CharField(source="config.name")
    prompt_name = serializers.CharField()
    prompt_version = serializers.CharField()
    input_tokens = serializers.IntegerField()
    output_tokens = serializers.IntegerField()
    cost = serializers.DecimalField(max_digits=12, decimal_places=6, coerce_to_string=False)
    latency_ms = serializers.IntegerField()
    attempts = serializers.IntegerField()
    error = serializers.CharField()
    raw_reply = serializers.CharField()
    created_at = serializers.DateTimeField()


class ItemDetailSerializer(serializers.Serializer):
    """Everything the item page shows."""

    id = serializers.IntegerField(source="item.id")
    run_id = serializers.IntegerField(source="item.run_id")
    external_id = serializers.CharField(source="item.example.external_id")
    position = serializers.IntegerField(source="item.example.position")
    status = serializers.ChoiceField(source="item.status", choices=ItemStatus.choices)
    error = serializers.CharField(source="item.error")
    overall_score = serializers.FloatField(source="item.overall_score", allow_null=True)
    duration_ms = serializers.IntegerField(source="item.duration_ms", allow_null=True)
    reviewed_at = serializers.DateTimeField(source="item.reviewed_at", allow_null=True)
    reviewed_by = serializers.CharField(source="item.reviewed_by.username", allow_null=True, default=None)
    query = serializers.CharField(source="item.example.query")
    response = serializers.CharField(
        help_text="The answer scored: the live target's (its snapshot; '' until it answers) when the run has one, "
        "else the dataset's."
    )
    reference_answer = serializers.CharField(source="item.example.reference_answer")
    tags = serializers.ListField(source="item.example.tags", child=serializers.CharField())
    contexts = ItemContextSerializer(many=True)
    results = serializers.SerializerMethodField()
    claims = ClaimSerializer(many=True)
    citation_audit = serializers.SerializerMethodField()
    judge_calls = JudgeCallSerializer(many=True)
    target = TargetSnapshotSerializer(
        source="target_snapshot",
        allow_null=True,
        help_text="What the run's live target returned for this item (null: the run scored stored answers, "
        "or the target was not called yet).",
    )

    @extend_schema_field(MetricResultSerializer(many=True))
    def get_results(self, review: Any) -> list[dict[str, Any]]:
        from evaluations.metrics import execution_order

        names = execution_order(review.item.run.metrics)
        ordered = [review.results[name] for name in names if name in review.results]
        return MetricResultSerializer(ordered, many=True).data

    @extend_schema_field(CitationAuditSerializer)
    def get_citation_audit(self, review: Any) -> dict[str, Any]:
        return CitationAuditSerializer(review.audit.as_details()).data


# --- Claims ------------------------------------------------------------------------------------


class OverrideInputSerializer(serializers.Serializer):
    verdict = serializers.ChoiceField(choices=Verdict.choices)
    reason = serializers.CharField(required=False, allow_blank=True, max_length=5000)


class ConfirmInputSerializer(serializers.Serializer):
    reason = serializers.CharField(required=False, allow_blank=True, max_length=5000)


class RescoredItemSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    overall_score = serializers.FloatField(allow_null=True)
    reviewed_at = serializers.DateTimeField(allow_null=True)
    results = MetricResultSerializer(many=True)


class RescoredRunSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=RunStatus.choices)
    summary = SummaryRowSerializer(many=True)
    aggregates = AggregatesField()


class ReviewResultSerializer(serializers.Serializer):
    claim = ClaimSerializer()
    item = RescoredItemSerializer()
    run = RescoredRunSerializer()


# --- Gate --------------------------------------------------------------------------------------


class GateBarSerializer(serializers.Serializer):
    metric = serializers.CharField()
    bar = serializers.FloatField()
    value = serializers.FloatField(allow_null=True, help_text="The run's mean; null when it has no score.")
    passed = serializers.BooleanField()


class GateSerializer(serializers.Serializer):
    run = serializers.IntegerField()
    status = serializers.ChoiceField(choices=RunStatus.choices)
    finished = serializers.BooleanField()
    passed = serializers.BooleanField(help_text="Every bar passed on a finished run with no problem.")
    exit_code = serializers.IntegerField(help_text="As `evaluate --fail-under`: 0 passed, 1 a bar failed, 2 error.")
    problem = serializers.CharField(help_text="Why the run cannot pass whatever its scores ('' when it can).")
    bars = GateBarSerializer(many=True)


# --- Comparison and agreement (dataclasses of plain values, as the services return them) -------


class RunRefSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    status = serializers.ChoiceField(choices=RunStatus.choices)
    dataset_id = serializers.IntegerField()
    dataset = serializers.CharField()
    dataset_version = serializers.IntegerField()
    judge_config_id = serializers.IntegerField()
    judge = serializers.CharField()
    items_total = serializers.IntegerField()
    created_at = serializers.CharField()


class FlipsSerializer(serializers.Serializer):
    n = serializers.IntegerField()
    pass_to_fail = serializers.IntegerField()
    fail_to_pass = serializers.IntegerField()
    p_value = serializers.FloatField(help_text="McNemar's exact test.")


class ItemChangeSerializer(serializers.Serializer):
    external_id = serializers.CharField()
    question = serializers.CharField()
    base_item_id = serializers.IntegerField()
    candidate_item_id = serializers.IntegerField()
    base_score = serializers.FloatField()
    candidate_score = serializers.FloatField()
    delta = serializers.FloatField()


class MetricComparisonSerializer(serializers.Serializer):
    metric = serializers.CharField()
    in_base = serializers.BooleanField()
    in_candidate = serializers.BooleanField()
    n_pairs = serializers.IntegerField()
    base_mean = serializers.FloatField(allow_null=True)
    candidate_mean = serializers.FloatField(allow_null=True)
    delta = serializers.FloatField(allow_null=True)
    ci_low = serializers.FloatField(allow_null=True, help_text="Paired bootstrap 95% interval of the delta.")
    ci_high = serializers.FloatField(allow_null=True)
    significant = serializers.BooleanField()
    errored = serializers.IntegerField()
    unscored = serializers.IntegerField()
    flips = FlipsSerializer(allow_null=True)
    regressed = serializers.IntegerField()
    improved = serializers.IntegerField()
    regressions = ItemChangeSerializer(many=True)
    improvements = ItemChangeSerializer(many=True)


class ItemPointSerializer(serializers.Serializer):
    external_id = serializers.CharField()
    question = serializers.CharField()
    base_item_id = serializers.IntegerField()
    candidate_item_id = serializers.IntegerField()
    base_status = serializers.CharField()
    candidate_status = serializers.CharField()
    base = serializers.DictField(child=serializers.FloatField(allow_null=True))
    candidate = serializers.DictField(child=serializers.FloatField(allow_null=True))


class SettingRowSerializer(serializers.Serializer):
    key = serializers.CharField()
    base = JsonValueField(allow_null=True)
    candidate = JsonValueField(allow_null=True)
    differs = serializers.BooleanField()


class SettingsDiffSerializer(serializers.Serializer):
    rows = SettingRowSerializer(many=True)
    judges_or_prompts_differ = serializers.BooleanField()
    warning = serializers.CharField()


class ComparisonSerializer(serializers.Serializer):
    base = RunRefSerializer()
    candidate = RunRefSerializer()
    matched = serializers.IntegerField()
    only_in_base = serializers.ListField(child=serializers.CharField())
    only_in_candidate = serializers.ListField(child=serializers.CharField())
    metrics = MetricComparisonSerializer(many=True)
    points = ItemPointSerializer(many=True)
    settings = SettingsDiffSerializer()
    calibrated = CalibratedComparisonSerializer(
        allow_null=True, help_text="Both runs' calibrated means compared (null unless both audits reached 30 items)."
    )


class KappaSerializer(serializers.Serializer):
    n = serializers.IntegerField()
    kappa = serializers.FloatField(allow_null=True, help_text="null: undefined (one label only on both sides).")
    ci_low = serializers.FloatField(allow_null=True)
    ci_high = serializers.FloatField(allow_null=True)
    observed_agreement = serializers.FloatField(allow_null=True)
    expected_agreement = serializers.FloatField(allow_null=True)


class ReviewedClaimSerializer(serializers.Serializer):
    claim_id = serializers.IntegerField()
    item_id = serializers.IntegerField()
    run_id = serializers.IntegerField()
    text = serializers.CharField()
    judge_verdict = serializers.CharField()
    final_verdict = serializers.CharField()
    reviews = serializers.IntegerField()
    changes = serializers.IntegerField()


class AgreementSerializer(serializers.Serializer):
    judge_config_id = serializers.IntegerField()
    judge = serializers.CharField()
    provider = serializers.CharField()
    model = serializers.CharField()
    prompt_version = serializers.CharField()
    reviewed = serializers.IntegerField()
    overridden = serializers.IntegerField()
    override_rate = serializers.FloatField()
    kappa = KappaSerializer()
    kappa_supported = KappaSerializer()
    labels = serializers.ListField(child=serializers.CharField())
    confusion = serializers.ListField(child=serializers.ListField(child=serializers.IntegerField()))
    most_overridden = ReviewedClaimSerializer(many=True)
    reliable = serializers.BooleanField()
