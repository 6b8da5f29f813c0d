"""One check of a judge config: a tiny prompt straight to the provider, reported as a sentence.

`manage.py check_judge` and the judges page both use `judge_check`.
"""

from __future__ import annotations

from dataclasses import dataclass

from judges import gateway
from judges.models import JudgeConfig
from judges.types import JudgeError


@dataclass(frozen=True)
class CheckReport:
    ok: bool
    message: str  # "judge 'x' (openai gpt-4.1-mini) answered in 412 ms (...)" or "... failed: <exact error>"
    latency_ms: int | None = None


def judge_check(config: JudgeConfig) -> CheckReport:
    """Send one relevancy prompt (no cache, retries or log); the latency and reply, or the provider's exact error."""
    where = f"{config.provider} {config.model}" + (f" at {config.base_url}" if config.base_url else "")
    try:
        result = gateway.check(config)
    except JudgeError as exc:
        return CheckReport(ok=False, message=f"judge {config.name!r} ({where}) failed: {exc}")
    label = " [offline heuristic, not an LLM]" if config.is_heuristic else ""
    message = (
        f"judge {config.name!r} ({where}){label} answered in {result.latency_ms} ms"
        f" ({result.input_tokens} input + {result.output_tokens} output tokens): {result.value}"
    )
    return CheckReport(ok=True, message=message, latency_ms=result.latency_ms)
