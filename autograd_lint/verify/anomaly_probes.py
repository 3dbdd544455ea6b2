"""The verifier's probe for anomaly detection switched on (AGL304).

Loaded by the child (child.py) by its file path, like the child itself: it
imports nothing of the package and is given torch. The check runs after the
flagged ``set_detect_anomaly(True)`` and returns a verdict ``(status,
evidence)`` with the child's status words. It confirms the switch took
effect (anomaly mode is on after the line); the slowdown itself is not
measured (timings on a shared machine prove nothing), nor whether code the
program runs later switches it off again.
"""

from __future__ import annotations

CONFIRMED, NOT_REPRODUCED = "confirmed", "not reproduced"


def check(torch, row: int) -> tuple[str, str]:
    if torch.is_anomaly_enabled():
        return CONFIRMED, (
            f"anomaly detection is on after line {row}: from here every backward records forward traces and checks "
            "each gradient, until something switches it off"
        )
    return NOT_REPRODUCED, f"anomaly detection is off after line {row}"
