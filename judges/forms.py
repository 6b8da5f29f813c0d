"""The judge config form, shared by the admin and the judges page: the service's validation, errors per field."""

from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError

from judges import services
from judges.models import JudgeConfig


class JudgeConfigForm(forms.ModelForm):
    # A plain CharField: the model's URLField rejects docker host names such as http://vllm:8000/v1.
    base_url = forms.CharField(
        required=False, help_text="e.g. http://localhost:8000/v1 for vLLM; empty for the provider's own API"
    )

    class Meta:
        model = JudgeConfig
        fields = ("name", *services.EDITABLE_FIELDS)
        labels = {"base_url": "Base URL", "api_key_env": "API key variable", "max_tokens": "Max reply tokens"}

    def _get_validation_exclusions(self) -> set[str]:
        return super()._get_validation_exclusions() | {"base_url"}  # checked by judge_config_validate

    def _post_clean(self) -> None:
        super()._post_clean()
        try:
            services.judge_config_validate(self.instance)
        except ValidationError as exc:
            self._update_errors(exc)

    def hide_rejected_api_key_env(self) -> None:
        """Never echo a rejected api_key_env: a value that is not a variable name is often the key itself."""
        if "api_key_env" in self.errors and self.is_bound:
            self.data = self.data.copy()
            self.data[self.add_prefix("api_key_env")] = ""
