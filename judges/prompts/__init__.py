"""Versioned prompt templates of the LLM judges: render them, and read rendered ones back.

One file per prompt in this folder, named after it, e.g. ``rubric.txt``::

    name: rubric
    version: 1
    expects_json: true
    fields: query, response, contexts, audit_rules

    === system
    Static instructions. The first line names the prompt and is unique among the prompts.
    === user
    <question>
    {{query}}
    </question>
    === user if audit_rules
    A part used only when the field audit_rules is not empty.

Parts of the user message are joined with a blank line. ``{{field}}`` stands for the field's
value, written according to its kind: text as is; claims and audit rules as numbered
``<claim n="1">…</claim>`` / ``<rule n="1">…</rule>`` lines; contexts as
``<context id="c1">…</context>`` blocks. Dataset text is escaped so it can never open or close
a tag: ``<`` becomes ``&lt;``, ``"`` in attributes becomes ``&quot;``, and ``&`` becomes
``&amp;`` only where it would otherwise read as one of these entities. That keeps ordinary text
(``R&D``, quotes, braces) untouched for the model and makes ``read_fields`` exact.

Change a prompt's text → bump its ``version``: every judge result records the version.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from judges.types import Context

PROMPT_NAMES: tuple[str, ...] = ("claim_extraction", "claim_verification", "relevancy", "rubric", "correctness")

_TEXT_FIELDS = frozenset({"query", "response", "reference"})
_NUMBERED_FIELDS = {"claims": "claim", "audit_rules": "rule"}  # field -> tag of one item
_CONTEXT_FIELDS = frozenset({"contexts"})
_EMPTY_LIST = "(none)"

_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")
_SECTION = re.compile(r"^=== (system|user)(?: if (\w+))?$")
_ENTITY = re.compile(r"&(lt|amp|quot);")
_ENTITY_CHARS = {"lt": "<", "amp": "&", "quot": '"'}


@dataclass(frozen=True)
class RenderedPrompt:
    name: str
    version: str
    system: str
    user: str
    fields: dict
    expects_json: bool


@dataclass(frozen=True)
class _UserPart:
    text: str
    condition: str | None  # a field name: the part is used only when that field is not empty


@dataclass(frozen=True)
class _Template:
    name: str
    version: str
    expects_json: bool
    fields: tuple[str, ...]
    system: str
    user_parts: tuple[_UserPart, ...]
    user_pattern: re.Pattern[str]


def render(name: str, fields: dict) -> RenderedPrompt:
    """Fill prompt `name` with `fields` (exactly its declared fields; KeyError names a missing one)."""
    template = _template(name)
    values = _checked_fields(template, fields)
    return RenderedPrompt(
        name=template.name,
        version=template.version,
        system=template.system,
        user=_render_user(template, values),
        fields=values,
        expects_json=template.expects_json,
    )


def prompt_version(name: str) -> str:
    return _template(name).version


def read_fields(system: str, user: str) -> tuple[str, dict]:
    """Which prompt a (system, user) message pair was rendered from, and with which fields.

    Raises ValueError when the pair is not exactly a rendering of one of our prompts.
    """
    first_line = system.split("\n", 1)[0].strip()
    template = _BY_FIRST_LINE.get(first_line)
    if template is None:
        raise ValueError(f"not an evalsite prompt: unknown system prompt starting {first_line[:80]!r}")
    match = template.user_pattern.fullmatch(user)
    if match is None:
        raise ValueError(f"user message does not follow the {template.name!r} prompt template")
    try:
        values = {field: _read_value(field, match.group(field)) for field in template.fields}
    except ValueError as error:
        raise ValueError(f"user message of the {template.name!r} prompt: {error}") from None
    if _render_user(template, values) != user:
        raise ValueError(f"user message is not an exact rendering of the {template.name!r} prompt")
    return template.name, values


# --- fields ------------------------------------------------------------------------------------


def _checked_fields(template: _Template, fields: dict) -> dict:
    missing = [field for field in template.fields if field not in fields]
    if missing:
        raise KeyError(f"prompt {template.name!r} needs field(s) {', '.join(missing)}")
    unknown = sorted(set(fields) - set(template.fields))
    if unknown:
        raise ValueError(f"prompt {template.name!r} takes no field(s) {', '.join(unknown)}")
    return {field: _checked_value(template.name, field, fields[field]) for field in template.fields}


def _checked_value(prompt: str, field: str, value: object) -> object:
    if field in _TEXT_FIELDS:
        if not isinstance(value, str):
            raise ValueError(f"field {field!r} of prompt {prompt!r} must be a str, not {type(value).__name__}")
        return value
    if not isinstance(value, list | tuple):
        raise ValueError(f"field {field!r} of prompt {prompt!r} must be a list, not {type(value).__name__}")
    item_type = Context if field in _CONTEXT_FIELDS else str
    for item in value:
        if not isinstance(item, item_type):
            raise ValueError(
                f"field {field!r} of prompt {prompt!r} must hold {item_type.__name__} items, not {type(item).__name__}"
            )
    return list(value)


def _render_user(template: _Template, values: dict) -> str:
    parts = [part for part in template.user_parts if part.condition is None or values[part.condition]]
    return "\n\n".join(_PLACEHOLDER.sub(lambda m: _write_value(m.group(1), values[m.group(1)]), p.text) for p in parts)


def _write_value(field: str, value: object) -> str:
    if field in _TEXT_FIELDS:
        return _escape(value)
    if not value:
        return _EMPTY_LIST
    if field in _CONTEXT_FIELDS:
        return "\n".join(
            f'<context id="{_escape(c.id, attribute=True)}">\n{_escape(c.text)}\n</context>' for c in value
        )
    tag = _NUMBERED_FIELDS[field]
    return "\n".join(f'<{tag} n="{n}">{_escape(item)}</{tag}>' for n, item in enumerate(value, start=1))


def _read_value(field: str, text: str | None) -> object:
    """Inverse of _write_value, up to re-rendering (read_fields checks that afterwards)."""
    if field in _TEXT_FIELDS:
        return _unescape(text or "")
    if text is None or text == _EMPTY_LIST:  # None: the field's conditional part was left out
        return []
    if field in _CONTEXT_FIELDS:
        found = re.findall(r'<context id="([^"<]*)">\n(.*?)\n</context>', text, re.S)
        items: list = [Context(id=_unescape(id_), text=_unescape(body)) for id_, body in found]
    else:
        tag = _NUMBERED_FIELDS[field]
        items = [_unescape(body) for body in re.findall(rf'<{tag} n="\d+">(.*?)</{tag}>', text, re.S)]
    if not items:
        raise ValueError(f"field {field!r} holds no items")
    return items


def _escape(text: str, *, attribute: bool = False) -> str:
    text = _ENTITY.sub(lambda m: "&amp;" + m.group(0)[1:], text)  # a literal "&lt;" must not read as "<"
    text = text.replace("<", "&lt;")
    return text.replace('"', "&quot;") if attribute else text


def _unescape(text: str) -> str:
    return _ENTITY.sub(lambda m: _ENTITY_CHARS[m.group(1)], text)


# --- template files ----------------------------------------------------------------------------


def _template(name: str) -> _Template:
    try:
        return _TEMPLATES[name]
    except KeyError:
        raise KeyError(f"unknown prompt {name!r}; known: {', '.join(PROMPT_NAMES)}") from None


def _load(path: Path) -> _Template:
    header, system, user_parts = {}, None, []
    section: list[str] | None = None
    for line in path.read_text(encoding="utf-8").split("\n"):
        match = _SECTION.match(line)
        if match:
            role, condition = match.groups()
            if role == "system" and (system is not None or condition):
                raise ValueError(f"{path.name}: one unconditional system section expected")
            section = []
            if role == "system":
                system = section
            else:
                user_parts.append((section, condition))
        elif section is not None:
            section.append(line)
        elif line.strip() and not line.startswith("#"):
            key, sep, value = line.partition(":")
            if not sep:
                raise ValueError(f"{path.name}: header line {line!r} is not 'key: value'")
            header[key.strip()] = value.strip()
    if system is None or not user_parts or user_parts[0][1] is not None:
        raise ValueError(f"{path.name}: needs a system section and an unconditional first user section")
    parts = tuple(_UserPart("\n".join(lines).strip("\n"), condition) for lines, condition in user_parts)
    template = _Template(
        name=header["name"],
        version=header["version"],
        expects_json={"true": True, "false": False}[header["expects_json"]],
        fields=tuple(field.strip() for field in header["fields"].split(",")),
        system="\n".join(system).strip("\n"),
        user_parts=parts,
        user_pattern=_user_pattern(parts),
    )
    _check_template(path, template)
    return template


def _user_pattern(parts: tuple[_UserPart, ...]) -> re.Pattern[str]:
    pieces = []
    for index, part in enumerate(parts):
        piece = ("" if index == 0 else "\n\n") + part.text
        pattern, position = [], 0
        for match in _PLACEHOLDER.finditer(piece):
            pattern += [re.escape(piece[position : match.start()]), f"(?P<{match.group(1)}>.*?)"]
            position = match.end()
        pattern.append(re.escape(piece[position:]))
        pieces.append("".join(pattern) if part.condition is None else f"(?:{''.join(pattern)})?")
    return re.compile("".join(pieces), re.S)


def _check_template(path: Path, template: _Template) -> None:
    used = [m.group(1) for part in template.user_parts for m in _PLACEHOLDER.finditer(part.text)]
    known = _TEXT_FIELDS | _CONTEXT_FIELDS | set(_NUMBERED_FIELDS)
    problems = [
        template.name != path.stem and "name differs from the file name",
        not template.version and "empty version",
        sorted(used) != sorted(template.fields) and "each declared field must appear exactly once in the user parts",
        not set(template.fields) <= known and "a declared field has no known kind",
        _PLACEHOLDER.search(template.system) and "the system section takes no fields",
        any(p.condition and p.condition not in template.fields for p in template.user_parts)
        and "a part's condition is not a declared field",
    ]
    problems = [problem for problem in problems if problem]
    if problems:
        raise ValueError(f"{path.name}: {'; '.join(problems)}")


_TEMPLATES = {name: _load(Path(__file__).with_name(f"{name}.txt")) for name in PROMPT_NAMES}
_BY_FIRST_LINE = {template.system.split("\n", 1)[0].strip(): template for template in _TEMPLATES.values()}
if len(_BY_FIRST_LINE) != len(_TEMPLATES):
    raise ValueError("every prompt's system section must start with its own first line")
