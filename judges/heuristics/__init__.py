"""The offline judge: deterministic heuristics, no network, no model.

It answers every prompt from the texts themselves (word overlap with light stemming and
synonyms; checks on numbers, dates, names and outcome words) and says it is a heuristic in
its feedback. Pure standard library, deterministic, fast enough for a fake LLM server to
call it thousands of times in a throughput benchmark.

Public API: `extract_claims`, `verify_claims`, `judge_relevancy`, `judge_rubric`,
`judge_correctness`, and `reply(prompt_name, fields)`, the answer text in the prompt's
output contract (what the offline provider and the fake LLM server send back).
Measured against human labels by bench/offline_wice.py.
"""

from __future__ import annotations

from judges.heuristics.claims import extract_claims
from judges.heuristics.correctness import judge_correctness
from judges.heuristics.relevancy import judge_relevancy
from judges.heuristics.replies import reply
from judges.heuristics.rubric import judge_rubric
from judges.heuristics.verify import verify_claims

__all__ = ["extract_claims", "judge_correctness", "judge_relevancy", "judge_rubric", "reply", "verify_claims"]
