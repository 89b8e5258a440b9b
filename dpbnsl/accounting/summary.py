"""What a private run promises, in one object: the (ε, δ) it guarantees, for which neighbouring
relation, certified by which accountant, and which inputs the guarantee takes as public.

Every accountant of :mod:`dpbnsl.accounting.compose` gives a valid upper bound on the privacy loss
of the same releases, so the guarantee is the smallest of them; the others are looser bounds on the
same run, never additional spend.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._validation import check_real

__all__ = ["PrivacySummary", "summarize_privacy", "format_up"]


def format_up(x: float, digits: int = 6) -> str:
    """``x`` with ``digits`` significant digits, rounded *up* (a privacy loss is never shown
    smaller than it is): 0.9999998 → '1', 1.2345601 → '1.23457'."""
    if not math.isfinite(x) or x <= 0:
        return f"{x:g}"
    text = f"{x:.{digits - 1}e}"
    if float(text) < x:  # rounded down: add one unit in the last shown digit
        mantissa, exponent = text.split("e")
        step = 10.0 ** (int(exponent) - digits + 1)
        text = f"{float(text) + step:.{digits - 1}e}"
    return f"{float(text):.{digits}g}"


@dataclass(frozen=True)
class PrivacySummary:
    """The guarantee of one private run, per participant.

    Attributes
    ----------
    epsilon, delta : float
        The run is (ε, δ)-DP for each participant's dataset: ε is the smallest of ``bounds``
        (at most the target the noise was calibrated to).
    target_epsilon : float
        The ε the noise was calibrated to.
    neighbouring : str
        The neighbouring relation (``"replace-one"``: datasets of equal size differing in one row).
    accountant : str
        The accountant that certifies ``epsilon`` (``"rdp"``, ``"zcdp"`` or ``"pld"``).
    calibration : str
        How the noise was calibrated (e.g. ``"tight"``, ``"paper"``, ``"analytic"``).
    bounds : mapping of accountant to ε
        Every accountant's ε(δ) for the same releases (the largest over participants); each is a
        valid upper bound, the others are looser than ``epsilon``.
    public : mapping
        What the guarantee takes as public, i.e. must not have been derived from the participant's
        data: sizes n_k, dimension d, clip bounds, feature bounds, declared centre, …
    """

    epsilon: float
    delta: float
    target_epsilon: float
    neighbouring: str
    accountant: str
    calibration: str
    bounds: Mapping[str, float]
    public: Mapping[str, Any] = field(default_factory=dict)

    @property
    def looser(self) -> dict[str, float]:
        """The other accountants' figures (upper bounds at least as large as ``epsilon``)."""
        return {k: v for k, v in self.bounds.items() if k != self.accountant}

    def __str__(self) -> str:
        delta = format_up(self.delta)
        if math.isinf(self.epsilon):
            return f"(ε, δ) = (inf, {delta}): no privacy guarantee (the noise is switched off)"
        trust = self.public.get("trust") if isinstance(self.public, Mapping) else None
        return (
            f"(ε, δ) = ({format_up(self.epsilon)}, {delta})-DP per participant, "
            f"{self.neighbouring}; accountant: {self.accountant} ({self.calibration})"
            + (f"; trust: {trust}" if trust else "")
        )

    def describe_looser(self) -> str:
        """One line naming the looser bounds, or '' when there are none."""
        if not self.looser or math.isinf(self.epsilon):
            return ""
        parts = ", ".join(f"ε = {format_up(v)} ({k})" for k, v in self.looser.items())
        return f"looser upper bounds on the same run (not extra spend): {parts}"


def summarize_privacy(
    ledgers: Sequence,
    *,
    delta: float,
    target_epsilon: float,
    neighbouring: str,
    calibration: str,
    accountants: Sequence[str],
    public: Mapping[str, Any],
) -> PrivacySummary:
    """The :class:`PrivacySummary` of a run whose participants spent ``ledgers`` (one
    :class:`~dpbnsl.accounting.PrivacyLedger` each): ε(δ) under each of ``accountants`` (the largest
    over participants), and the smallest of them as the guarantee. Ledgers with identical entries
    are composed once."""
    dl = check_real(delta, "delta", low=0.0, high=1.0, low_open=True, high_open=True)
    distinct: list[Any] = []
    for ledger in ledgers:
        if not any(ledger.entries == seen.entries for seen in distinct):
            distinct.append(ledger)
    bounds = {acc: max(lg.epsilon(dl, accountant=acc) for lg in distinct) for acc in accountants}
    best = min(bounds, key=bounds.__getitem__)
    return PrivacySummary(
        bounds[best],
        dl,
        float(target_epsilon),
        str(neighbouring),
        best,
        str(calibration),
        bounds,
        dict(public),
    )
