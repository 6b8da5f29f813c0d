"""Run a stdlib HTTP server in the foreground: the demo RAG server and the fake LLM server both do."""

from __future__ import annotations

import signal
import sys
from socketserver import BaseServer


def serve_until_stopped(server: BaseServer, banner: str) -> None:
    """Print `banner` (its first line is what tests read for the URL), serve until SIGTERM or Ctrl-C, then close."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(banner, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
