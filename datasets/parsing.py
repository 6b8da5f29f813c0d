"""Read a dataset file (JSONL, JSON array or CSV) into canonical items, or say all that is wrong with it.

Steps: read the file as records (one per JSONL line, JSON array element or CSV data row), map the
Ragas / DeepEval field names onto ours, check every field, then check ids across records. Problems are
collected (up to MAX_PROBLEMS) and raised together, so one upload shows everything to fix.
"""

from __future__ import annotations

import codecs
import csv
import hashlib
import json
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any, BinaryIO, TypedDict

FORMATS = ("jsonl", "json", "csv")
MAX_PROBLEMS = 20
# The command line's limit: the operator's own file, read in flat memory (halved: room for a bounded read's +1).
NO_SIZE_LIMIT = sys.maxsize // 2

_EXTENSIONS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json", ".csv": "csv"}
CANONICAL_FIELDS = (
    "id",
    "query",
    "response",
    "contexts",
    "reference_answer",
    "expected_context_ids",
    "retrieved_ids",
    "tags",
    "metadata",
)
# Ragas: user_input, retrieved_contexts, reference, response. DeepEval: input, actual_output,
# retrieval_context, expected_output.
ALIASES = {
    "user_input": "query",
    "input": "query",
    "retrieved_contexts": "contexts",
    "retrieval_context": "contexts",
    "reference": "reference_answer",
    "expected_output": "reference_answer",
    "actual_output": "response",
}
_MAX_ID_LENGTH = 255  # Example.external_id
_CSV_JSON_FIELDS = {"contexts", "metadata", "tags", "expected_context_ids", "retrieved_ids"}
_CSV_PIPE_FIELDS = {"tags", "expected_context_ids", "retrieved_ids"}


class StoredContext(TypedDict, total=False):
    """A context as an Example stores it (JSON); the judge sees `judges.types.Context`."""

    id: str
    text: str
    score: float
    metadata: dict[str, Any]


class Item(TypedDict):
    id: str
    query: str
    response: str
    contexts: list[StoredContext]
    reference_answer: str
    expected_context_ids: list[str]
    retrieved_ids: list[str] | None
    tags: list[str]
    metadata: dict[str, Any]


@dataclass(frozen=True)
class Problem:
    where: str  # "line 3" (JSONL), "item 3" (JSON, 0-based), "data row 3" (CSV), "header", "file"
    field: str | None
    message: str

    def __str__(self) -> str:
        if self.field:
            return f"{self.where}, field '{self.field}': {self.message}"
        return f"{self.where}: {self.message}"


class DatasetImportError(Exception):
    def __init__(self, message: str, problems: list[Problem] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.problems = problems or []


class _TooManyProblems(Exception):
    pass


@dataclass
class _Problems:
    found: list[Problem] = field(default_factory=list)
    truncated: bool = False

    def add(self, where: str, field: str | None, message: str) -> None:
        self.found.append(Problem(where, field, message))
        if len(self.found) >= MAX_PROBLEMS:
            self.truncated = True
            raise _TooManyProblems


def resolve_format(filename: str, fmt: str | None = None) -> str:
    """The explicit format if given, otherwise the one the file's extension names."""
    if fmt:
        fmt = fmt.lower().lstrip(".")
        if fmt not in FORMATS:
            raise DatasetImportError(f"Unknown format '{fmt}': use one of {', '.join(FORMATS)}.")
        return fmt
    suffix = PurePath(filename or "").suffix.lower()
    if suffix not in _EXTENSIONS:
        raise DatasetImportError(
            f"Cannot tell the format of '{filename}' from its extension: name it .jsonl, .json or .csv, "
            "or choose the format."
        )
    return _EXTENSIONS[suffix]


class ItemStream:
    """The valid items of a file, a batch at a time, for writing while the rest is still being read.

    Memory stays flat whatever the file's size (JSONL and CSV are read line by line; a JSON array is
    one document and is read whole): only the batch in hand, the ids seen (for duplicates) and the
    running content hash are kept. Batches come while the file is clean so far; after the first
    problem the rest is still checked, to report up to MAX_PROBLEMS at once, but nothing more is
    yielded. At the end, DatasetImportError if anything was wrong or there were no items: the caller
    writes inside one transaction, so raising rolls back whatever it wrote ("validated whole,
    nothing half-written"). `count` and `sha256` are final once the batches are exhausted.
    """

    def __init__(self, file: BinaryIO, *, fmt: str, max_bytes: int) -> None:
        self.file = file
        self.fmt = fmt
        self.max_bytes = max_bytes
        self.count = 0
        self._digest = hashlib.sha256()

    @property
    def sha256(self) -> str:
        return self._digest.hexdigest()

    def batches(self, size: int) -> Iterator[list[Item]]:
        problems = _Problems()
        first_seen: dict[str, str] = {}
        batch: list[Item] = []
        try:
            for where, record in _RECORD_READERS[self.fmt](self.file, self.max_bytes, problems):
                item = normalize_item(record, position=self.count + 1, where=where, problems=problems)
                if item is None:
                    continue
                if item["id"] in first_seen:
                    problems.add(where, "id", f"duplicate id '{item['id']}' (first used on {first_seen[item['id']]})")
                first_seen.setdefault(item["id"], where)
                self.count += 1
                if problems.found:
                    continue
                _hash_item(self._digest, item)
                batch.append(item)
                if len(batch) >= size:
                    yield batch
                    batch = []
        except _TooManyProblems:
            pass
        if problems.found:
            count = len(problems.found)
            message = f"The file has {count} problem{'s' if count > 1 else ''}; nothing was imported."
            if problems.truncated:
                message += f" Checking stopped after the first {MAX_PROBLEMS}."
            raise DatasetImportError(message, problems.found)
        if not self.count:
            raise DatasetImportError("The file is empty: it holds no items; nothing was imported.")
        if batch:
            yield batch


def parse_dataset(file: BinaryIO, *, fmt: str, max_bytes: int) -> list[Item]:
    """Every item of the file, canonical, in memory (small files); raises DatasetImportError listing the problems."""
    return [item for batch in ItemStream(file, fmt=fmt, max_bytes=max_bytes).batches(1000) for item in batch]


def content_sha256(items: Iterable[Item]) -> str:
    """Hash of the canonical content: the same items give the same hash whatever the file's format or name."""
    digest = hashlib.sha256()
    for item in items:
        _hash_item(digest, item)
    return digest.hexdigest()


def _hash_item(digest: Any, item: Item) -> None:
    digest.update(json.dumps(item, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode())
    digest.update(b"\n")


# --- records -----------------------------------------------------------------


def _too_large(max_bytes: int) -> DatasetImportError:
    return DatasetImportError(
        f"The file is over the size limit of {_human_size(max_bytes)}; nothing was imported. "
        "Split it into smaller datasets, or import it with `manage.py import_dataset` (no size limit)."
    )


def _human_size(size: int) -> str:
    if size >= 1024 * 1024:
        return f"{size / (1024 * 1024):g} MB"
    if size >= 1024:
        return f"{size / 1024:g} KB"
    return f"{size} bytes"


def _text_lines(file: BinaryIO, max_bytes: int, problems: _Problems) -> Iterator[tuple[int, str]]:
    """(line number, text) for each line, reading at most max_bytes; bad UTF-8 is a problem, not a crash."""
    total = 0
    number = 0
    while True:
        raw = file.readline(max_bytes - total + 1)  # a bounded read, even for a file with no newlines
        if not raw:
            return
        total += len(raw)
        if total > max_bytes:
            raise _too_large(max_bytes)
        number += 1
        if number == 1 and raw.startswith(codecs.BOM_UTF8):
            raw = raw[len(codecs.BOM_UTF8) :]
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            problems.add(f"line {number}", None, _utf8_message(raw, exc))
            text = raw.decode("utf-8", errors="replace")
        yield number, text


def _utf8_message(raw: bytes, exc: UnicodeDecodeError) -> str:
    return f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at byte {exc.start + 1} of the line); save the file as UTF-8"


def _jsonl_records(file: BinaryIO, max_bytes: int, problems: _Problems) -> Iterator[tuple[str, dict]]:
    for number, text in _text_lines(file, max_bytes, problems):
        if not text.strip():
            continue
        where = f"line {number}"
        try:
            record = json.loads(text)
        except json.JSONDecodeError as exc:
            problems.add(where, None, f"invalid JSON: {exc.msg} (column {exc.colno})")
            continue
        if not isinstance(record, dict):
            problems.add(where, None, f"must be a JSON object, got {_type_name(record)}")
            continue
        yield where, record


def _json_records(file: BinaryIO, max_bytes: int, problems: _Problems) -> Iterator[tuple[str, dict]]:
    raw = file.read(max_bytes + 1)
    if len(raw) > max_bytes:
        raise _too_large(max_bytes)
    if raw.startswith(codecs.BOM_UTF8):
        raw = raw[len(codecs.BOM_UTF8) :]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        problems.add(f"line {line}", None, f"not valid UTF-8 (byte 0x{raw[exc.start]:02x}); save the file as UTF-8")
        return
    if not text.strip():
        return
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        problems.add(f"line {exc.lineno}, column {exc.colno}", None, f"invalid JSON: {exc.msg}")
        return
    if not isinstance(data, list):
        problems.add("file", None, f"the top level must be a JSON array of objects, got {_type_name(data)}")
        return
    for index, record in enumerate(data):
        if not isinstance(record, dict):
            problems.add(f"item {index}", None, f"must be a JSON object, got {_type_name(record)}")
            continue
        yield f"item {index}", record


def _csv_records(file: BinaryIO, max_bytes: int, problems: _Problems) -> Iterator[tuple[str, dict]]:
    # A cell may hold a whole JSON list of contexts: allow cells as large as the file may be.
    csv.field_size_limit(max(csv.field_size_limit(), max_bytes))
    reader = csv.reader(text for _, text in _text_lines(file, max_bytes, problems))
    try:
        header = next(reader, None)
        if header is None:
            return
        columns = _csv_columns(header, problems)
        if columns is None:
            return
        number = 0
        for row in reader:
            if not any(cell.strip() for cell in row):
                continue
            number += 1
            where = f"data row {number}"
            if len(row) > len(header):
                problems.add(where, None, f"has {len(row)} cells but the header has {len(header)} columns")
                continue
            yield where, _csv_record(row, columns, where, problems)
    except csv.Error as exc:
        problems.add(f"line {reader.line_num}", None, f"unreadable CSV: {exc}")


def _csv_columns(header: list[str], problems: _Problems) -> dict[int, str] | None:
    """Column index → canonical field name; None when the header cannot work."""
    columns: dict[int, str] = {}
    written: dict[str, str] = {}
    for index, name in enumerate(header):
        key = name.strip()
        canonical = ALIASES.get(key, key)
        if canonical not in CANONICAL_FIELDS:
            continue
        if canonical in written:
            problems.add("header", key, f"'{written[canonical]}' and '{key}' are both the {canonical} column")
            continue
        written[canonical] = key
        columns[index] = canonical
    if "query" not in written:
        problems.add("header", None, "no 'query' column (also accepted: user_input, input)")
        return None
    return columns


_UNSET = object()


def _csv_record(row: list[str], columns: dict[int, str], where: str, problems: _Problems) -> dict:
    record: dict[str, Any] = {}
    for index, cell in enumerate(row):
        name = columns.get(index)
        if name is None or cell == "":
            continue
        value = _csv_value(name, cell, where, problems) if name in _CSV_JSON_FIELDS else cell
        if value is not _UNSET:
            record[name] = value
    return record


def _csv_value(name: str, cell: str, where: str, problems: _Problems) -> Any:
    text = cell.strip()
    if name in _CSV_PIPE_FIELDS and not text.startswith("["):
        return [part.strip() for part in text.split("|") if part.strip()]
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        shape = "a JSON object" if name == "metadata" else "a JSON list"
        if name in _CSV_PIPE_FIELDS:
            shape += " or a |-separated string"
        problems.add(where, name, f"the cell holds invalid JSON ({exc.msg}, column {exc.colno}); write {shape}")
        return _UNSET


_RECORD_READERS = {"jsonl": _jsonl_records, "json": _json_records, "csv": _csv_records}


# --- one item -----------------------------------------------------------------


def normalize_item(record: dict, *, position: int, where: str, problems: _Problems) -> Item | None:
    """The canonical item for one record; None (with problems added) when it is invalid."""
    before = len(problems.found)
    fields, names = _canonical_fields(record, where, problems)
    check = _FieldChecker(where, names, problems)
    item: Item = {
        "id": check.example_id(fields.get("id"), position),
        "query": check.text("query", fields.get("query"), required=True),
        "response": check.text("response", fields.get("response")),
        "contexts": check.contexts(fields.get("contexts")),
        "reference_answer": check.text("reference_answer", fields.get("reference_answer")),
        "expected_context_ids": check.id_list("expected_context_ids", fields.get("expected_context_ids")) or [],
        "retrieved_ids": check.id_list("retrieved_ids", fields.get("retrieved_ids")),
        "tags": check.tags(fields.get("tags")),
        "metadata": check.mapping("metadata", fields.get("metadata")),
    }
    return item if len(problems.found) == before else None


def _canonical_fields(record: dict, where: str, problems: _Problems) -> tuple[dict[str, Any], dict[str, str]]:
    """Values by canonical name, and the name each was written under in the file."""
    fields: dict[str, Any] = {}
    names: dict[str, str] = {}
    for key, value in record.items():
        canonical = ALIASES.get(key, key)
        if canonical not in CANONICAL_FIELDS:
            continue
        if canonical in names:
            problems.add(where, key, f"'{names[canonical]}' and '{key}' both give the {canonical}; keep one")
            continue
        fields[canonical] = value
        names[canonical] = key
    return fields, names


@dataclass
class _FieldChecker:
    where: str
    names: dict[str, str]
    problems: _Problems

    def _problem(self, canonical: str, message: str) -> None:
        self.problems.add(self.where, self.names.get(canonical, canonical), message)

    def example_id(self, value: Any, position: int) -> str:
        if value is None:
            return str(position)
        if isinstance(value, bool) or not isinstance(value, str | int):
            self._problem("id", f"must be a string or an integer, got {_type_name(value)}")
            return ""
        text = str(value)
        if not text.strip():
            self._problem("id", "is empty; give an id or leave the field out")
        elif len(text) > _MAX_ID_LENGTH:
            self._problem("id", f"is longer than {_MAX_ID_LENGTH} characters")
        return text

    def text(self, canonical: str, value: Any, *, required: bool = False) -> str:
        if value is None:
            if required:
                aliases = [alias for alias, target in ALIASES.items() if target == canonical]
                accepted = f" (also accepted: {', '.join(aliases)})" if aliases else ""
                self._problem(canonical, f"is missing{accepted}")
            return ""
        if not isinstance(value, str):
            self._problem(canonical, f"must be a string, got {_type_name(value)}")
            return ""
        if required and not value.strip():
            self._problem(canonical, "is empty")
        return value

    def contexts(self, value: Any) -> list[StoredContext]:
        if value is None:
            return []
        if not isinstance(value, list):
            self._problem("contexts", f"must be a list of strings or of objects with 'text', got {_type_name(value)}")
            return []
        contexts = [self._context(index, entry) for index, entry in enumerate(value)]
        seen: set[str] = set()
        for context in contexts:
            if context["id"] in seen:
                self._problem("contexts", f"duplicate context id '{context['id']}'")
            seen.add(context["id"])
        return contexts

    def _context(self, index: int, entry: Any) -> StoredContext:
        name = f"{self.names.get('contexts', 'contexts')}[{index}]"
        positional = str(index + 1)
        if isinstance(entry, str):
            return {"id": positional, "text": entry}
        if not isinstance(entry, dict) or not isinstance(entry.get("text"), str):
            self.problems.add(self.where, name, "must be a string or an object with a string 'text'")
            return {"id": positional, "text": ""}
        context: StoredContext = {"id": positional, "text": entry["text"]}
        raw_id = entry.get("id")
        if raw_id is not None:
            if isinstance(raw_id, bool) or not isinstance(raw_id, str | int) or not str(raw_id).strip():
                self.problems.add(self.where, f"{name}.id", "must be a non-empty string or an integer")
            context["id"] = str(raw_id)
        score = entry.get("score")
        if score is not None:
            if isinstance(score, bool) or not isinstance(score, int | float):
                self.problems.add(self.where, f"{name}.score", f"must be a number, got {_type_name(score)}")
            context["score"] = score
        metadata = entry.get("metadata")
        if metadata is not None:
            if not isinstance(metadata, dict):
                self.problems.add(self.where, f"{name}.metadata", f"must be an object, got {_type_name(metadata)}")
            context["metadata"] = metadata
        return context

    def id_list(self, canonical: str, value: Any) -> list[str] | None:
        if value is None:
            return None
        if not isinstance(value, list) or any(
            isinstance(entry, bool) or not isinstance(entry, str | int) for entry in value
        ):
            self._problem(canonical, f"must be a list of id strings, got {_describe_list(value)}")
            return []
        return [str(entry) for entry in value]

    def tags(self, value: Any) -> list[str]:
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(entry, str) for entry in value):
            self._problem("tags", f"must be a list of strings, got {_describe_list(value)}")
            return []
        return value

    def mapping(self, canonical: str, value: Any) -> dict[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            self._problem(canonical, f"must be an object, got {_type_name(value)}")
            return {}
        return value


def _type_name(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "true/false", int: "a number", float: "a number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def _describe_list(value: Any) -> str:
    if not isinstance(value, list):
        return _type_name(value)
    kinds = sorted({_type_name(entry) for entry in value})
    return f"a list holding {' and '.join(kinds)}"
