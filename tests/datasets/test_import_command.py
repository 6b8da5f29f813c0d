from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import connections

from datasets.management.commands.import_dataset import Command
from datasets.models import DatasetVersion
from datasets.parsing import DatasetImportError
from datasets.services import dataset_import
from tests.datasets.conftest import assert_nothing_stored, item, jsonl

DEMO = Path(__file__).resolve().parents[2] / "datasets" / "demo" / "stip-governance.jsonl"


def run(*args: str) -> str:
    out = StringIO()
    call_command("import_dataset", *args, stdout=out)
    return out.getvalue()


def test_importing_prints_the_version_and_count(db) -> None:
    assert run(str(DEMO), "--name", "stip") == "Imported stip version 1: 7 items.\n"
    assert DatasetVersion.objects.get().item_count == 7


def test_importing_the_same_file_again_says_unchanged(db) -> None:
    run(str(DEMO), "--name", "stip")
    assert run(str(DEMO), "--name", "stip") == "Unchanged: stip version 1 already holds this content (7 items).\n"
    assert DatasetVersion.objects.count() == 1


def test_the_format_option_beats_the_extension(db, tmp_path: Path) -> None:
    path = tmp_path / "export.txt"
    path.write_bytes(b"id,query\n1,q\n")
    assert "version 1: 1 items" in run(str(path), "--name", "x", "--format", "csv")


def test_a_bad_file_fails_with_its_problems_and_stores_nothing(db, tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(jsonl(item(1), {"id": "q-2", "query": 5}))
    with pytest.raises(CommandError) as caught:
        run(str(path), "--name", "bad")
    assert str(caught.value) == (
        f"{path}: The file has 1 problem; nothing was imported.\n  line 2, field 'query': must be a string, got a number"
    )
    assert_nothing_stored()


def test_a_missing_file_fails(db, tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="Cannot read .*nope.jsonl: No such file or directory"):
        run(str(tmp_path / "nope.jsonl"), "--name", "x")
    assert_nothing_stored()


def test_a_failed_command_exits_non_zero(db, tmp_path: Path, monkeypatch) -> None:
    # given the command run as from a shell, where CommandError becomes the exit status
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"{oops\n")
    command_err = StringIO()
    command = Command(stderr=command_err)
    monkeypatch.setattr(connections, "close_all", lambda: None)  # keep the test's transaction open
    # when
    with pytest.raises(SystemExit) as exit_info:
        command.run_from_argv(["manage.py", "import_dataset", str(path), "--name", "x"])
    # then
    assert exit_info.value.code == 1
    assert "line 1: invalid JSON" in command_err.getvalue()
    assert_nothing_stored()


def test_the_command_line_has_no_size_limit(db, tmp_path: Path, settings) -> None:
    # given a file over the web upload's limit
    path = tmp_path / "big.jsonl"
    path.write_bytes(jsonl(*(item(n) for n in range(1, 30))))
    settings.DATASET_MAX_UPLOAD_BYTES = path.stat().st_size // 2
    # when it is imported from the command line, it is accepted
    assert run(str(path), "--name", "big") == "Imported big version 1: 29 items.\n"
    # while the same content through the upload path is refused
    with path.open("rb") as file, pytest.raises(DatasetImportError, match="over the size limit"):
        dataset_import(name="web", file=file, filename="big.jsonl")
