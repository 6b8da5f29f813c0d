"""A fake LLM server (OpenAI and Anthropic HTTP APIs) for tests and benchmarks: `python -m fakellm`.

A test tool, not part of the application: nothing under evalsite/, datasets/, evaluations/ or
judges/ imports it.
"""

from __future__ import annotations

from fakellm.server import FakeLLM, FakeServer, load_script, serve
from fakellm.wire import GENERIC_REPLY, PROSE_REPLY

__all__ = ("GENERIC_REPLY", "PROSE_REPLY", "FakeLLM", "FakeServer", "load_script", "serve")
