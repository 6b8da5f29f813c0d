"""evalsite/db.py: the SQLite version check and identifier quoting of the hand-written SQL."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import connection

from evalsite.db import check_sqlite_version, quote, table
from judges.models import JudgeCall


def test_an_old_sqlite_is_refused_with_the_version_it_needs() -> None:
    with pytest.raises(ImproperlyConfigured, match=r"SQLite 3\.31\.1 is too old; evalsite needs SQLite >= 3\.35\.0"):
        check_sqlite_version("django.db.backends.sqlite3", (3, 31, 1))


def test_a_recent_sqlite_or_another_database_passes() -> None:
    check_sqlite_version("django.db.backends.sqlite3", (3, 35, 0))
    check_sqlite_version("django.db.backends.postgresql", (3, 0, 0))


def test_identifiers_are_quoted_for_the_backend() -> None:
    assert table(JudgeCall) == connection.ops.quote_name("judges_judgecall")
    assert quote("cache_key") == connection.ops.quote_name("cache_key") != "cache_key"
