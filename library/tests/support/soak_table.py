"""The kill trials' table: one row per trial, printed at the end of the test session.

``make soak`` runs many trials; the table is what a reader checks: where each kill landed,
what the restart found, and the verdict.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class TrialRow:
    trial: int
    seed: int
    connector: str
    first_kill: str  # the moment aimed at, then what the checkpoint and ledger showed
    second_kill: str
    committed: int  # batches committed in the end
    gap_markers: int  # batches the ledger marked as committed but unrecorded
    plan: str  # the plan made after the kills, against the oracle
    verdict: str


ROWS: list[TrialRow] = []

_COLUMNS = (
    ("trial", 5),
    ("seed", 6),
    ("connector", 9),
    ("first kill", 44),
    ("second kill", 44),
    ("batches", 7),
    ("gaps", 4),
    ("plan after the kills", 22),
    ("verdict", 0),
)


def render(rows: list[TrialRow]) -> list[str]:
    """The rows as an aligned text table, a header line first."""

    def line(cells: tuple[object, ...]) -> str:
        return "  ".join(
            str(cell).ljust(width) if width else str(cell)
            for cell, (_, width) in zip(cells, _COLUMNS, strict=True)
        ).rstrip()

    table = [line(tuple(name for name, _ in _COLUMNS))]
    for row in rows:
        table.append(
            line(
                (
                    row.trial,
                    row.seed,
                    row.connector,
                    row.first_kill,
                    row.second_kill,
                    row.committed,
                    row.gap_markers,
                    row.plan,
                    row.verdict,
                )
            )
        )
    passed = sum(row.verdict == "exact" for row in rows)
    table.append(f"{passed} of {len(rows)} trials exact")
    return table
