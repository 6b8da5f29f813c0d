"""Serve plotly.min.js from the installed plotly package as the static file `vendor/plotly.min.js`.

No copy in the repository and no CDN: the file always matches the pinned plotly version, and
`collectstatic` copies it (and only it, not the rest of plotly's package data) like any other.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import plotly
from django.contrib.staticfiles.finders import BaseFinder
from django.core.files.storage import FileSystemStorage

PLOTLY_STATIC_PATH = "vendor/plotly.min.js"
_PACKAGE_DATA = Path(plotly.__file__).resolve().parent / "package_data"
_FILE_NAME = "plotly.min.js"


class PlotlyFinder(BaseFinder):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.storage = FileSystemStorage(location=str(_PACKAGE_DATA))
        self.storage.prefix = PLOTLY_STATIC_PATH.rsplit("/", 1)[0]  # collectstatic puts the file under vendor/

    def check(self, **kwargs: Any) -> list:
        return []

    def find(self, path: str, find_all: bool = False, **kwargs: Any) -> str | list[str] | None:
        if path != PLOTLY_STATIC_PATH:
            return [] if find_all or kwargs.get("all") else None
        found = str(_PACKAGE_DATA / _FILE_NAME)
        return [found] if find_all or kwargs.get("all") else found

    def list(self, ignore_patterns: Any) -> Iterator[tuple[str, FileSystemStorage]]:
        yield _FILE_NAME, self.storage
