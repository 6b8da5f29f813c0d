from __future__ import annotations

from django import forms

from datasets.models import Dataset
from datasets.parsing import FORMATS


class DatasetUploadForm(forms.Form):
    """The file itself is checked by the import service, which reports every problem at once."""

    name = forms.CharField(
        max_length=Dataset._meta.get_field("name").max_length,
        help_text="An existing name adds a new version to that dataset.",
    )
    file = forms.FileField(help_text="JSONL, a JSON array or CSV, in UTF-8.")
    format = forms.ChoiceField(
        choices=[("", "From the file's extension")] + [(fmt, fmt.upper()) for fmt in FORMATS],
        required=False,
    )

    def clean_name(self) -> str:
        return self.cleaned_data["name"].strip()
