"""`python -m fakellm`: the fake LLM server on a port (see fakellm/server.py for endpoints and options)."""

from __future__ import annotations

import argparse

from evalsite.serving import serve_until_stopped
from fakellm.server import FakeLLM, FakeServer, load_script
from fakellm.server import __doc__ as SERVER_DOC


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m fakellm", description=(SERVER_DOC or "").split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765, help="0: any free port (the URL printed says which)")
    parser.add_argument("--latency-ms", type=float, default=200)
    parser.add_argument("--jitter-ms", type=float, default=50)
    parser.add_argument(
        "--error-rate", type=float, default=0.0, help="share of requests answered with a 500 or a malformed reply"
    )
    parser.add_argument("--rpm", type=int, default=None, help="answer 429 past this many requests a minute")
    parser.add_argument("--script", help="JSON lines of {match, reply[, status, retry_after, times, delay_ms]}")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--api-key", default=None, help="require this key (else any key is accepted)")
    parser.add_argument("--reject-json-mode", action="store_true", help="answer 400 to OpenAI JSON mode")
    args = parser.parse_args(argv)
    if not 0 <= args.error_rate <= 1:
        parser.error("--error-rate must be between 0 and 1")
    server = FakeServer(
        (args.host, args.port),
        FakeLLM(
            latency_ms=args.latency_ms,
            jitter_ms=args.jitter_ms,
            error_rate=args.error_rate,
            rpm=args.rpm,
            script=load_script(args.script) if args.script else (),
            seed=args.seed,
            api_key=args.api_key,
            reject_json_mode=args.reject_json_mode,
        ),
    )
    serve_until_stopped(server, f"fakellm listening on {server.url}")


if __name__ == "__main__":
    main()
