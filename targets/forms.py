"""The target form (the targets page and the admin): JSON fields as text, the mapping as three fields,
the service's validation with each error next to its field."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from targets import services
from targets.mapping import KEYS as MAPPING_KEYS
from targets.models import Target

JSON_HELP = {
    "headers": 'A JSON object. Secrets by the name of an environment variable: {"Authorization": {"env": '
    '"RAG_TOKEN", "format": "Bearer {}"}}; plain values for the rest.',
    "request_template": "JSON sent for each item; strings may use {{query}}, {{id}}, {{reference_answer}}, "
    "{{tags}}, {{metadata.x}}. A GET target sends it as the query string.",
}
MAPPING_HELP = {
    "answer": "JMESPath of the answer string, e.g. answer or data.output.text",
    "contexts": "Optional: a list of strings, or of objects with text (and id, score), e.g. "
    "sources[].{id: doc_id, text: chunk, score: similarity}",
    "retrieved_ids": "Optional: ids in rank order, e.g. sources[].id (default: the contexts' ids)",
}


class JSONTextField(forms.CharField):
    """A JSON value edited as text; the error says where the JSON breaks."""

    widget = forms.Textarea(attrs={"rows": 5, "class": "mono", "spellcheck": "false"})

    def prepare_value(self, value: Any) -> str:
        if isinstance(value, str):
            return value
        return json.dumps(value, indent=2, ensure_ascii=False) if value is not None else ""

    def to_python(self, value: Any) -> Any:
        text = (value or "").strip()
        if not text:
            return {}
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValidationError(f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None


class TargetForm(forms.ModelForm):
    url = forms.CharField(label="URL", help_text="e.g. http://127.0.0.1:8100/query")
    headers = JSONTextField(required=False, help_text=JSON_HELP["headers"])
    request_template = JSONTextField(required=False, help_text=JSON_HELP["request_template"])
    answer = forms.CharField(label="Answer", help_text=MAPPING_HELP["answer"])
    contexts = forms.CharField(label="Contexts", required=False, help_text=MAPPING_HELP["contexts"])
    retrieved_ids = forms.CharField(label="Retrieved ids", required=False, help_text=MAPPING_HELP["retrieved_ids"])

    class Meta:
        model = Target
        fields = ("name", "url", "method", "headers", "request_template", *MAPPING_KEYS)
        fields = (*fields, "timeout_seconds", "max_concurrency", "requests_per_minute")
        labels = {"timeout_seconds": "Timeout (s)", "requests_per_minute": "Requests per minute"}
        help_texts = {
            "max_concurrency": "Calls in flight at once, across all workers (0: no limit).",
            "requests_per_minute": "Empty: no limit.",
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for key in MAPPING_KEYS:
            self.fields[key].widget.attrs.update({"class": "mono", "spellcheck": "false"})
            self.fields[key].initial = (self.instance.response_mapping or {}).get(key, "")
        if self.instance.pk is None and not self.is_bound:
            self.fields["request_template"].initial = {"query": "{{query}}", "id": "{{id}}"}

    def _get_validation_exclusions(self) -> set[str]:
        return super()._get_validation_exclusions() | {"url"}

    def _post_clean(self) -> None:
        data = self.cleaned_data
        mapping = {key: data.get(key, "").strip() for key in MAPPING_KEYS if data.get(key, "").strip()}
        self.instance.response_mapping = mapping
        super()._post_clean()
        try:
            services.target_validate(self.instance)
        except ValidationError as exc:
            self._show(exc)

    def _show(self, exc: ValidationError) -> None:
        for field, messages in exc.message_dict.items():
            for message in messages:
                key = message.split(":", 1)[0]
                if field == "response_mapping" and key in MAPPING_KEYS:
                    self.add_error(key, message.split(":", 1)[1].strip())
                elif field in self.fields:
                    self.add_error(field, message)
                else:
                    self.add_error(None, f"{field}: {message}")

    def service_fields(self) -> dict[str, Any]:
        """What target_create / target_update take."""
        data = self.cleaned_data
        fields = {name: data[name] for name in services.EDITABLE_FIELDS if name in data}
        fields["response_mapping"] = self.instance.response_mapping
        return fields
