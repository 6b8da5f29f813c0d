"""Offline judge vs human labels on WiCE claims (dev split, oracle evidence chunks).

Each row is a claim with the evidence sentences of one chunk and a human label
(supported / partially_supported / not_supported). A row's sentences form one context; the
judge verifies the whole claim against it. Most claims come in about 3 rows; the claim-level
label is the best over its rows, for the humans and for the judge alike
(SUPPORTED > PARTIALLY_SUPPORTED > NOT_ENOUGH_INFO / CONTRADICTED).

Run: .venv/bin/python bench/offline_wice.py [--path P]   (pure Python, no Django)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from judges.heuristics import verify, verify_claims  # noqa: E402
from judges.types import CONTRADICTED, NOT_ENOUGH_INFO, PARTIALLY_SUPPORTED, SUPPORTED, Context  # noqa: E402

DEFAULT_PATH = REPO.parent / "shared" / "external" / "wice" / "oracle-claim-dev.jsonl"
LABELS = ("supported", "partially_supported", "not_supported")
RANK = {label: rank for rank, label in enumerate(reversed(LABELS))}  # higher is better
JUDGE_TO_LABEL = {
    SUPPORTED: "supported",
    PARTIALLY_SUPPORTED: "partially_supported",
    CONTRADICTED: "not_supported",
    NOT_ENOUGH_INFO: "not_supported",
}


def load_rows(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def row_verdicts(rows: list[dict]) -> list[str]:
    """The judge's label for each row: the claim verified against that row's evidence chunk."""
    labels = []
    for row in rows:
        context = Context(id="chunk", text="\n".join(row["evidence"]))
        labels.append(JUDGE_TO_LABEL[verify_claims([row["claim"]], [context])[0].verdict])
    return labels


def best_per_claim(rows: list[dict], labels: list[str]) -> dict[str, str]:
    """The best label over each claim's rows, claims in file order."""
    best: dict[str, str] = {}
    for row, label in zip(rows, labels, strict=True):
        claim = row["claim"]
        if claim not in best or RANK[label] > RANK[best[claim]]:
            best[claim] = label
    return best


def confusion(human: dict, judge: dict, labels: tuple[str, ...]) -> dict[str, dict[str, int]]:
    matrix = {truth: dict.fromkeys(labels, 0) for truth in labels}
    for claim, truth in human.items():
        matrix[truth][judge[claim]] += 1
    return matrix


def balanced_accuracy(matrix: dict[str, dict[str, int]]) -> float:
    recalls = [row[truth] / sum(row.values()) for truth, row in matrix.items() if sum(row.values())]
    return sum(recalls) / len(recalls)


def print_matrix(title: str, matrix: dict[str, dict[str, int]]) -> None:
    labels = list(matrix)
    width = max(len(label) for label in labels) + 2
    print(title)
    print("human \\ judge".ljust(width) + "".join(label.rjust(width) for label in labels) + "recall".rjust(9))
    for truth in labels:
        row = matrix[truth]
        total = sum(row.values())
        recall = row[truth] / total if total else 0.0
        print(truth.ljust(width) + "".join(str(row[label]).rjust(width) for label in labels) + f"{recall:9.3f}")


def binary(labels: dict[str, str]) -> dict[str, str]:
    return {claim: "supported" if label == "supported" else "not_fully_supported" for claim, label in labels.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path", type=Path, default=DEFAULT_PATH, help=f"WiCE jsonl (default {DEFAULT_PATH})")
    args = parser.parse_args(argv)
    if not args.path.is_file():
        print(f"WiCE file not found: {args.path} (see ../shared/external/wice/README.md)", file=sys.stderr)
        return 2

    rows = load_rows(args.path)
    started = time.perf_counter()
    judged = row_verdicts(rows)
    elapsed = time.perf_counter() - started
    human = best_per_claim(rows, [row["label"] for row in rows])
    judge = best_per_claim(rows, judged)

    print(
        f"rows: {len(rows)}  claims: {len(human)}  elapsed: {elapsed:.2f} s ({elapsed / len(rows) * 1000:.2f} ms/row)"
    )
    print(
        f"judge settings: SUPPORTED_AT={verify.SUPPORTED_AT} PARTIAL_AT={verify.PARTIAL_AT} "
        f"MAX_EVIDENCE_UNITS={verify.MAX_EVIDENCE_UNITS}"
    )
    print()
    three_way = confusion(human, judge, LABELS)
    print_matrix("claim level, 3-way", three_way)
    print(f"balanced accuracy (3-way): {balanced_accuracy(three_way):.3f}")
    print()
    two_way = confusion(binary(human), binary(judge), ("supported", "not_fully_supported"))
    print_matrix("claim level, supported vs not fully supported", two_way)
    print(f"balanced accuracy (binary): {balanced_accuracy(two_way):.3f}")
    print()
    by_row = confusion(dict(enumerate(row["label"] for row in rows)), dict(enumerate(judged)), LABELS)
    print(f"row level (each evidence chunk on its own), balanced accuracy (3-way): {balanced_accuracy(by_row):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
