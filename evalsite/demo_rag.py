"""`python -m evalsite.demo_rag`: a small RAG stand-in to evaluate as a live target.

Keyword retrieval (TF-IDF over words) across the contexts of the demo dataset
(datasets/demo/stip-governance.jsonl, or `--corpus` JSONL files in the dataset format), and an
answer built from the best chunk's most relevant lines, citing its id: `... [stip-tally]`.

    POST /query  {"query": "...", "id": "q-1", "top_k": 3}   (GET /query?query=... too)
      -> {"answer": "...", "sources": [{"id", "text", "score"}], "latency_ms": 12}
    GET /stats   requests served, per query and per id, most at once (tests read it)
    GET /health

Options: --port (0: any free port; the first line printed is the URL), --latency-ms, --error-rate
(a share of requests answered with a 500, decided by --seed, the query and how many times it was
asked, so a run is reproducible and a retry may succeed), --token-env NAME (require
`Authorization: Bearer <$NAME>`), and for tests --fail-ids / --slow-ids (ids always answered with
a 500 / answered after --slow-ms).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from evalsite.serving import serve_until_stopped

DEMO_CORPUS = Path(__file__).resolve().parents[1] / "datasets" / "demo" / "stip-governance.jsonl"
WORD = re.compile(r"[a-z0-9]+")
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "of",
        "to",
        "in",
        "on",
        "for",
        "by",
        "with",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "it",
        "its",
        "this",
        "that",
        "what",
        "which",
        "who",
        "whom",
        "how",
        "when",
        "where",
        "why",
        "did",
        "does",
        "do",
        "from",
        "as",
        "at",
        "about",
        "into",
        "than",
        "then",
        "there",
        "their",
        "they",
        "them",
        "has",
        "have",
        "had",
        "not",
        "no",
    ]
)
ANSWER_LINES = 2


def words(text: str) -> list[str]:
    return [word for word in WORD.findall(text.lower()) if word not in STOPWORDS and len(word) > 1]


class Index:
    """The chunks (unique by id) and their TF-IDF weights."""

    def __init__(self, chunks: dict[str, str]) -> None:
        self.chunks = chunks
        self.terms = {chunk_id: Counter(words(text)) for chunk_id, text in chunks.items()}
        frequency = Counter(term for counts in self.terms.values() for term in counts)
        total = max(len(chunks), 1)
        self.idf = {term: math.log(1 + total / count) for term, count in frequency.items()}

    @classmethod
    def from_files(cls, paths: list[Path]) -> Index:
        chunks: dict[str, str] = {}
        for path in paths:
            for line in path.read_text(encoding="utf-8").splitlines():
                if not line.strip():
                    continue
                for position, context in enumerate(json.loads(line).get("contexts") or [], start=1):
                    if isinstance(context, str):
                        context = {"id": str(position), "text": context}
                    chunks.setdefault(str(context.get("id", position)), str(context.get("text", "")))
        return cls(chunks)

    def search(self, query: str, top_k: int) -> list[tuple[str, float]]:
        asked = set(words(query))
        scored = []
        for chunk_id, counts in self.terms.items():
            score = sum(self.idf[term] * (1 + math.log(counts[term])) for term in asked if term in counts)
            if score > 0:
                length = math.sqrt(sum(counts.values()))
                scored.append((chunk_id, round(score / max(length, 1.0), 4)))
        scored.sort(key=lambda pair: (-pair[1], pair[0]))
        return scored[:top_k]

    def answer(self, query: str, hits: list[tuple[str, float]]) -> str:
        if not hits:
            return "I could not find anything about that in the documents."
        best_id = hits[0][0]
        asked = set(words(query))
        pieces = [piece.strip() for piece in re.split(r"\n+|(?<=[.!?])\s+", self.chunks[best_id]) if piece.strip()]
        headings = [piece.startswith("#") for piece in pieces]
        lines = [piece.strip(" #-*") for piece in pieces]
        # the lines sharing most words with the question; a heading only when nothing else does
        ranked = sorted(range(len(lines)), key=lambda i: (headings[i], -len(asked & set(words(lines[i]))), i))[
            :ANSWER_LINES
        ]
        picked = [lines[i].rstrip(".") for i in sorted(ranked) if lines[i]]
        return ". ".join(picked) + f". [{best_id}]"


class DemoRAG:
    def __init__(
        self,
        index: Index,
        *,
        latency_ms: float = 0,
        error_rate: float = 0.0,
        seed: int = 0,
        token: str = "",
        fail_ids: frozenset[str] = frozenset(),
        slow_ids: frozenset[str] = frozenset(),
        slow_ms: float = 5000,
    ) -> None:
        self.index = index
        self.latency_ms = latency_ms
        self.error_rate = error_rate
        self.seed = seed
        self.token = token
        self.fail_ids = fail_ids
        self.slow_ids = slow_ids
        self.slow_ms = slow_ms
        self.lock = threading.Lock()
        self.requests = 0
        self.by_query: Counter[str] = Counter()
        self.by_id: Counter[str] = Counter()
        self.in_flight = 0
        self.max_in_flight = 0

    def handle(self, payload: dict[str, Any], authorization: str) -> tuple[int, dict[str, Any]]:
        with self.lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return self._answer(payload, authorization)
        finally:
            with self.lock:
                self.in_flight -= 1

    def _answer(self, payload: dict[str, Any], authorization: str) -> tuple[int, dict[str, Any]]:
        started = time.monotonic()
        query = str(payload.get("query") or "")
        item_id = str(payload.get("id") or "")
        with self.lock:
            self.requests += 1
            self.by_query[query] += 1
            self.by_id[item_id] += 1
            asked = self.by_query[query]
        if self.token and authorization != f"Bearer {self.token}":
            return 401, {"error": "missing or wrong bearer token"}
        if not query:
            return 400, {"error": "query: required"}
        delay = self.slow_ms if item_id in self.slow_ids else self.latency_ms
        time.sleep(delay / 1000)
        if item_id in self.fail_ids:
            return 500, {"error": f"internal error answering {item_id}"}
        if self.error_rate and random.Random(f"{self.seed}:{query}:{asked}").random() < self.error_rate:
            return 500, {"error": "internal error (demo_rag --error-rate)"}
        try:
            top_k = max(1, min(int(payload.get("top_k") or 3), 20))
        except (TypeError, ValueError):
            return 400, {"error": "top_k: must be a whole number"}
        hits = self.index.search(query, top_k)
        sources = [{"id": chunk_id, "text": self.index.chunks[chunk_id], "score": score} for chunk_id, score in hits]
        latency = round((time.monotonic() - started) * 1000)
        return 200, {"answer": self.index.answer(query, hits), "sources": sources, "latency_ms": latency}

    def stats(self) -> dict[str, Any]:
        with self.lock:
            return {
                "requests": self.requests,
                "max_in_flight": self.max_in_flight,
                "by_query": dict(self.by_query),
                "by_id": dict(self.by_id),
            }


class Handler(BaseHTTPRequestHandler):
    server: DemoServer

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        if urlsplit(self.path).path.rstrip("/") != "/query":
            return self._send(404, {"error": "POST /query"})
        try:
            length = int(self.headers.get("Content-Length") or 0)
            payload = json.loads(self.rfile.read(length) or b"{}")
        except (ValueError, UnicodeDecodeError):
            return self._send(400, {"error": "the body must be JSON"})
        if not isinstance(payload, dict):
            return self._send(400, {"error": "the body must be a JSON object"})
        self._send(*self.server.app.handle(payload, self.headers.get("Authorization", "")))

    def do_GET(self) -> None:  # noqa: N802
        parts = urlsplit(self.path)
        path = parts.path.rstrip("/")
        if path == "/query":
            params = {key: values[-1] for key, values in parse_qs(parts.query).items()}
            return self._send(*self.server.app.handle(params, self.headers.get("Authorization", "")))
        if path == "/stats":
            return self._send(200, self.server.app.stats())
        if path in ("", "/health"):
            return self._send(200, {"ok": True, "chunks": len(self.server.app.index.chunks)})
        self._send(404, {"error": "GET /query, /stats or /health"})

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet by default
        pass


class DemoServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], app: DemoRAG) -> None:
        super().__init__(address, Handler)
        self.app = app

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/query"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m evalsite.demo_rag", description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8100, help="0: any free port (the URL printed says which)")
    parser.add_argument("--latency-ms", type=float, default=0, help="added to every answer")
    parser.add_argument("--error-rate", type=float, default=0.0, help="share of requests answered with a 500")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--corpus", action="append", type=Path, help="dataset JSONL whose contexts to search")
    parser.add_argument("--token-env", default="", help="require Authorization: Bearer <value of this variable>")
    parser.add_argument("--fail-ids", default="", help="comma-separated ids always answered with a 500 (tests)")
    parser.add_argument("--slow-ids", default="", help="comma-separated ids answered after --slow-ms (tests)")
    parser.add_argument("--slow-ms", type=float, default=5000)
    args = parser.parse_args(argv)
    if not 0 <= args.error_rate <= 1:
        parser.error("--error-rate must be between 0 and 1")
    token = ""
    if args.token_env:
        token = os.environ.get(args.token_env, "")
        if not token:
            parser.error(f"--token-env: environment variable {args.token_env} is not set")
    app = DemoRAG(
        Index.from_files(args.corpus or [DEMO_CORPUS]),
        latency_ms=args.latency_ms,
        error_rate=args.error_rate,
        seed=args.seed,
        token=token,
        fail_ids=frozenset(filter(None, args.fail_ids.split(","))),
        slow_ids=frozenset(filter(None, args.slow_ids.split(","))),
        slow_ms=args.slow_ms,
    )
    server = DemoServer((args.host, args.port), app)
    serve_until_stopped(server, f"demo_rag listening on {server.url} ({len(app.index.chunks)} chunks)")


if __name__ == "__main__":
    main()
