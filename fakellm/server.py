"""A fake LLM server speaking the OpenAI and Anthropic HTTP APIs, for tests and benchmarks.

    python -m fakellm --port 8765 [--host 127.0.0.1] [--latency-ms 200] [--jitter-ms 50]
        [--error-rate 0.05] [--rpm N] [--script FILE] [--seed S] [--api-key KEY] [--reject-json-mode]

Endpoints:
    POST /v1/chat/completions   OpenAI chat completions (point an `openai` client at <url>/v1)
    POST /v1/messages           Anthropic messages (point an `anthropic` client at <url>)
    GET  /stats                 requests, by endpoint, tokens in/out, errors by kind, max in flight,
                                the arrival times of the last 10,000 requests, the last 100 bodies
    POST /reset                 zero the stats (and the scripted rows' use counts)
    POST /script                replace the script with the JSON list of rows in the body

Replies: the first script row whose `match` regex finds the concatenated messages (system + user);
else the offline judge's answer (`judges.prompts.read_fields` -> `judges.heuristics.reply`), so
results look real; else, for a prompt it cannot read, a short generic reply.

Script (`--script FILE`, JSON lines): `{"match": regex, "reply": text}` with optional
`"status": 500` (answer with that HTTP error instead), `"retry_after": 1` (Retry-After header, s),
`"times": 1` (the row applies to its first N matches, then falls through) and `"delay_ms": 3000`
(extra latency, e.g. to provoke client timeouts).

Faults: past `--rpm` requests in the last 60 s a 429 with Retry-After; with probability
`--error-rate` a 500 or a malformed reply (truncated JSON or prose), half each. Script matches are
exempt from the random faults. With `--api-key`, requests must carry that key (else 401). With
`--reject-json-mode`, OpenAI `response_format: json_object` gets a 400, as LM Studio answers.

Prints `fakellm listening on <url>` once ready. A ThreadingHTTPServer (a daemon thread per
connection, HTTP/1.1 keep-alive) sustains hundreds of concurrent slow requests.

Slightly over ~350 lines on purpose: the FakeLLM behaviour (script, faults, stats) is one state
machine under one lock; the wire formats live in fakellm/wire.py.
"""

from __future__ import annotations

import json
import math
import random
import re
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from fakellm.wire import (
    anthropic_message,
    count_tokens,
    default_reply,
    error_body,
    malformed,
    messages,
    openai_completion,
    presented_key,
    unauthorized_message,
    wants_json,
)

OPENAI_PATH = "/v1/chat/completions"
ANTHROPIC_PATH = "/v1/messages"
RPM_WINDOW_SECONDS = 60.0
RECENT_REQUESTS = 10_000
RECENT_BODIES = 100
ANTHROPIC_API_VERSION_WITHOUT_SAMPLING = "2026-10-21"


@dataclass
class ScriptRow:
    pattern: re.Pattern[str]
    reply: str | None = None
    status: int = 200
    retry_after: float | None = None
    times: int | None = None
    delay_ms: int = 0
    used: int = 0

    @classmethod
    def from_dict(cls, row: dict[str, Any]) -> ScriptRow:
        if "match" not in row:
            raise ValueError(f"script row without 'match': {row!r}")
        return cls(
            pattern=re.compile(row["match"], re.DOTALL),
            reply=row.get("reply"),
            status=int(row.get("status", 200)),
            retry_after=row.get("retry_after"),
            times=row.get("times"),
            delay_ms=int(row.get("delay_ms", 0)),
        )


def load_script(path: str) -> list[ScriptRow]:
    with open(path, encoding="utf-8") as lines:
        return [ScriptRow.from_dict(json.loads(line)) for line in lines if line.strip()]


@dataclass
class Answer:
    status: int
    body: dict[str, Any]
    headers: dict[str, str]


class FakeLLM:
    """The server's behaviour and counters, shared by the handler threads."""

    def __init__(
        self,
        *,
        latency_ms: float = 200,
        jitter_ms: float = 50,
        error_rate: float = 0.0,
        rpm: int | None = None,
        script: Iterable[ScriptRow] = (),
        seed: int | None = None,
        api_key: str | None = None,
        reject_json_mode: bool = False,
    ) -> None:
        self.latency_ms = latency_ms
        self.jitter_ms = jitter_ms
        self.error_rate = error_rate
        self.rpm = rpm
        self.script = list(script)
        self.api_key = api_key
        self.reject_json_mode = reject_json_mode
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self.reset()

    # --- control ---------------------------------------------------------------------------------

    def reset(self) -> None:
        with self._lock:
            self._requests = 0
            self._by_endpoint: Counter[str] = Counter()
            self._errors: Counter[str] = Counter()
            self._tokens_in = 0
            self._tokens_out = 0
            self._in_flight = 0
            self._max_in_flight = 0
            self._recent: deque[float] = deque(maxlen=RECENT_REQUESTS)
            self._bodies: deque[object] = deque(maxlen=RECENT_BODIES)
            self._admitted: deque[float] = deque()
            for row in self.script:
                row.used = 0

    def set_script(self, rows: Iterable[dict[str, Any]]) -> None:
        script = [ScriptRow.from_dict(row) for row in rows]
        with self._lock:
            self.script = script

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {
                "requests": self._requests,
                "by_endpoint": dict(self._by_endpoint),
                "tokens_in": self._tokens_in,
                "tokens_out": self._tokens_out,
                "errors": dict(self._errors),
                "in_flight": self._in_flight,
                "max_in_flight": self._max_in_flight,
                "request_times": list(self._recent),
                "recent_bodies": list(self._bodies),
            }

    # --- one request -----------------------------------------------------------------------------

    def answer(self, path: str, raw: bytes, headers: Any) -> Answer:
        with self._lock:
            self._requests += 1
            self._by_endpoint[path] += 1
            self._recent.append(time.time())
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)
        try:
            return self._answer(path, raw, headers)
        finally:
            with self._lock:
                self._in_flight -= 1

    def _answer(self, path: str, raw: bytes, headers: Any) -> Answer:
        api = "openai" if path == OPENAI_PATH else "anthropic"
        try:
            body = json.loads(raw or b"{}")
            system, user = messages(api, body)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            return self._error(api, 400, "bad_request", f"Could not parse the request body: {exc}")
        with self._lock:
            self._bodies.append(body)
        if self.api_key is not None and presented_key(headers) != self.api_key:
            return self._error(api, 401, "unauthorized", unauthorized_message(api, presented_key(headers)))
        if api == "anthropic" and headers.get("anthropic-version") == ANTHROPIC_API_VERSION_WITHOUT_SAMPLING:
            for name in ("temperature", "top_p", "top_k"):
                if name in body:
                    return self._error(api, 400, "bad_request", f"{name}: Extra inputs are not permitted")
        if (
            api == "openai"
            and self.reject_json_mode
            and (body.get("response_format") or {}).get("type") == "json_object"
        ):
            return self._error(api, 400, "bad_request", "'response_format.type' must be 'json_schema' or 'text'")
        retry_after = self._rate_limited()
        if retry_after is not None:
            return self._error(api, 429, "rate_limited", "Rate limit reached for requests", retry_after=retry_after)

        prompt_text = f"{system}\n{user}"
        row = self._script_row(prompt_text)
        delay_ms = self._latency_ms() + (row.delay_ms if row else 0)
        time.sleep(delay_ms / 1000)
        if row is not None and row.status != 200:
            return self._error(api, row.status, f"scripted_{row.status}", "Scripted error", retry_after=row.retry_after)
        if row is not None and row.reply is not None:
            text = row.reply
        else:
            text = default_reply(system, user, wants_json=wants_json(body))
            if row is None and self.error_rate and self._roll() < self.error_rate:
                if self._roll() < 0.5:
                    return self._error(api, 500, "server_error", "The server had an error processing your request.")
                self._count_error("malformed")
                text = malformed(text, self._roll())

        max_tokens = body.get("max_completion_tokens") or body.get("max_tokens")
        truncated = bool(max_tokens) and len(text) > max_tokens * 4
        if truncated:
            text = text[: max_tokens * 4]
        tokens_in, tokens_out = count_tokens(prompt_text), count_tokens(text)
        with self._lock:
            self._tokens_in += tokens_in
            self._tokens_out += tokens_out
        model = body.get("model", "fake-model")
        if api == "openai":
            return Answer(200, openai_completion(model, text, tokens_in, tokens_out, truncated), {})
        return Answer(200, anthropic_message(model, text, tokens_in, tokens_out, truncated), {})

    def _rate_limited(self) -> float | None:
        """None if the request fits in --rpm, else seconds until it would."""
        if not self.rpm:
            return None
        now = time.monotonic()
        with self._lock:
            while self._admitted and self._admitted[0] <= now - RPM_WINDOW_SECONDS:
                self._admitted.popleft()
            if len(self._admitted) >= self.rpm:
                return self._admitted[0] + RPM_WINDOW_SECONDS - now
            self._admitted.append(now)
            return None

    def _script_row(self, text: str) -> ScriptRow | None:
        with self._lock:
            for row in self.script:
                if (row.times is None or row.used < row.times) and row.pattern.search(text):
                    row.used += 1
                    return row
        return None

    def _latency_ms(self) -> float:
        with self._lock:
            return max(0.0, self.latency_ms + self._random.uniform(-self.jitter_ms, self.jitter_ms))

    def _roll(self) -> float:
        with self._lock:
            return self._random.random()

    def _count_error(self, kind: str) -> None:
        with self._lock:
            self._errors[kind] += 1

    def _error(self, api: str, status: int, kind: str, message: str, *, retry_after: float | None = None) -> Answer:
        self._count_error(kind)
        headers = {}
        if retry_after is not None:
            headers["Retry-After"] = str(max(1, math.ceil(retry_after)) if retry_after >= 1 else retry_after)
        return Answer(status, error_body(api, status, message), headers)


# --- HTTP ------------------------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the SDKs pool connections
    disable_nagle_algorithm = True  # else headers and body, sent apart, stall on delayed ACKs (40 ms a reply)
    server: FakeServer

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        path = self.path.split("?", 1)[0].rstrip("/")
        fake = self.server.fake
        if path in (OPENAI_PATH, ANTHROPIC_PATH):
            answer = fake.answer(path, raw, self.headers)
            self._send(answer.status, answer.body, answer.headers)
        elif path == "/reset":
            fake.reset()
            self._send(200, {"ok": True})
        elif path == "/script":
            try:
                fake.set_script(json.loads(raw or b"[]"))
            except (ValueError, TypeError, re.error) as exc:
                self._send(400, {"error": str(exc)})
                return
            self._send(200, {"ok": True, "rows": len(fake.script)})
        else:
            self._send(404, {"error": f"no such endpoint: POST {path}"})

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        if path == "/stats":
            self._send(200, self.server.fake.stats())
        elif path in ("", "/health"):
            self._send(200, {"ok": True})
        else:
            self._send(404, {"error": f"no such endpoint: GET {path}"})

    def _send(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # quiet: benchmarks send thousands of requests
        pass


class FakeServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # bursts of new connections must not overflow the listen backlog
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], fake: FakeLLM) -> None:
        super().__init__(address, _Handler)
        self.fake = fake

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):
            return  # the client gave up (its timeout): normal in tests of timeouts
        super().handle_error(request, client_address)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def close(self) -> None:
        self.shutdown()
        self.server_close()


def serve(*, host: str = "127.0.0.1", port: int = 0, **options: Any) -> FakeServer:
    """Start a fake LLM server on a background thread (port 0: a free one); `server.url`, `server.close()`."""
    server = FakeServer((host, port), FakeLLM(**options))
    threading.Thread(target=server.serve_forever, name="fakellm", daemon=True).start()
    return server
