"""A one-run audit of a Gaussian-DP claim: the f-DP analysis of one run's canary guesses.

Steinke, Nasr & Jagielski's one-run bound (:func:`~dpbnsl.audits.one_run_bound`) tests an
(ε, δ) claim, and its δ term grows with the number of canaries m, so it stays far below the claim
of a Gaussian mechanism. Mahloujifar, Melis & Chaudhuri (ICML 2025, "Auditing f-differential
privacy in one run") test the claimed trade-off curve f instead. For a μ-GDP claim,
f(x) = Φ(Φ⁻¹(1 − x) − μ), and its *blow-up* f̄(x) = 1 − f(x) = Φ(Φ⁻¹(x) + μ) is concave and
increasing with f̄(0) = 0.

**The constraint.** m canaries, independent fair coins S_i (1 in, 0 out); after the run the auditor
makes r guesses, v of them right; W is the number of right guesses. Fix j ≥ 1 and canary i guessed
"in". The event A = {i guessed "in", and at least j − 1 of the *other* guesses right} depends on
the output and on S_{−i} only, so it is a test between S_i = 1 and S_i = 0 given S_{−i}, and f-DP
gives P₁(A) ≤ f̄(P₀(A)). Under S_i = 1, A means "i right and W ≥ j"; under S_i = 0, "i wrong and
W ≥ j − 1". Averaging over i and S_{−i} (Jensen, f̄ concave), with

    R_j = E[W·1{W ≥ j}]/m   and   H_j = E[(r − W)·1{W ≥ j}]/m,

gives 2R_j ≤ f̄(2H_{j−1}) when the strategy guesses only "in" (or, by the symmetry of f, only
"out"), whatever the output.
With guesses of both kinds, the two kinds' events are added before Jensen and the constraint is
R_j ≤ f̄(H_{j−1}), the paper's. Both are g(R_j) ≤ H_{j−1} for a concave, increasing g:
g(x) = f̄⁻¹(x) (mixed guesses) or ½f̄⁻¹(2x) (one-sided; never smaller, so never weaker).

**The test.** Suppose P[W ≥ v] ≥ α. The distribution of W that satisfies every constraint with
the least probability mass puts α at W = v and, going down j = v, v − 1, …, 1, adds at W = j − 1
just the mass that lifts H_{j−1} to g⁻¹(R_j) (the paper's recursion; mass at j − 1 is the cheapest
way: it raises R least per unit of H). The total mass is m(R₀ + H₀)/r; if it exceeds 1 the
supposition is false, i.e. P[W ≥ v] < α under the claim, and the claim is rejected at level α. The
test is monotone in μ, and :func:`one_run_gdp_bound` reports the largest μ it rejects (bisection,
to 1e-9) and ε(δ) of that μ-GDP curve.

**Assumption.** What is refuted is the μ-GDP claim. For a mechanism whose privacy curve is
Gaussian — the analytic Gaussian mechanism, which DP-Fed-BNSL's covariance release is — this is a
bound on its ε(δ). For other mechanisms, μ_lb still refutes μ-GDP for smaller μ, but ε(δ) of
μ_lb-GDP need not bound their ε(δ) (as for :func:`~dpbnsl.audits.gdp_lower_bound`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special

from .._validation import check_real
from ..accounting.gaussian import gaussian_epsilon
from .bounds import check_guesses

__all__ = ["OneRunGDPBound", "one_run_gdp_bound", "gdp_one_run_rejects"]

#: the largest μ searched (μ-GDP with μ = 40 is ε ≈ 800 at δ = 10⁻⁵: beyond any claim)
_MU_MAX = 40.0


@dataclass(frozen=True)
class OneRunGDPBound:
    """Output of :func:`one_run_gdp_bound`: with probability ≥ 1 − α the mechanism is not μ-GDP
    (per canary) for any μ < ``mu_lb``; ``epsilon_lb`` is ε(``delta``) of μ_lb-GDP.

    ``canaries`` = m, ``guesses`` = r (non-abstaining), ``correct`` = v; ``one_sided``: the
    sharper constraint of the module docstring was used (a one-signed strategy was declared).
    """

    mu_lb: float
    epsilon_lb: float
    delta: float
    alpha: float
    canaries: int
    guesses: int
    correct: int
    one_sided: bool
    method: str = "mahloujifar-melis-chaudhuri-2025 (Gaussian curve)"

    def violates(self, claimed_epsilon: float) -> bool:
        """True when ``epsilon_lb`` exceeds ``claimed_epsilon`` (≥ 0, may be ∞)."""
        c = check_real(claimed_epsilon, "claimed_epsilon", low=0.0, allow_inf=True)
        return self.epsilon_lb > c


def gdp_one_run_rejects(mu: float, m: int, r: int, v: int, alpha: float, *, one_sided: bool) -> bool:
    """Whether v right guesses out of r on m canaries reject μ-GDP at level α (module docstring).

    ``one_sided=False`` is the paper's recursion, valid for any guesses; ``True`` is valid only
    when every guess has the same sign.
    """
    if v == 0:
        return False
    if mu >= _MU_MAX:
        return False

    def g(x: float) -> float:  # the least H_{j-1} that R_j = x needs; inf when none does
        y = 2.0 * x if one_sided else x
        if y >= 1.0:
            return math.inf
        inv = float(special.ndtr(special.ndtri(y) - mu))  # f̄⁻¹(y) for μ-GDP
        return 0.5 * inv if one_sided else inv

    R, H = alpha * v / m, alpha * (r - v) / m
    for i in range(v - 1, -1, -1):  # mass added at W = i lifts H_i to g(R_{i+1})
        need = g(R)
        if need == math.inf:
            return True
        if need <= H:  # nothing to add here, and hence at no lower level either
            break
        R += i / (r - i) * (need - H)
        H = need
    return R + H > r / m


def one_run_gdp_bound(
    guesses: Any,
    truths: Any,
    *,
    alpha: float = 0.05,
    delta: float = 1e-5,
    one_sided: bool = False,
) -> OneRunGDPBound:
    """One-run lower bound on μ (Gaussian DP) from canary guesses, and the ε(δ) it implies.

    Parameters
    ----------
    guesses : array of shape (m,) in {−1, 0, +1}
        The auditor's guess per canary (+1 in, −1 out, 0 abstain). Which canaries are guessed
        may depend on the run's output only, and the number of guesses should be fixed in
        advance (e.g. the k highest scores).
    truths : array of shape (m,) in {−1, +1}
        Whether each canary was in; each an independent fair coin.
    alpha : float in (0, 1)
        Failure probability of the bound.
    delta : float in (0, 1)
        The δ at which ε(δ) of μ_lb-GDP is reported.
    one_sided : bool, default False
        Which constraint the recursion uses (module docstring). ``False``: the paper's, valid for
        any guessing strategy (what jax-privacy's ``epsilon_one_run_fdp`` computes). ``True``:
        the sharper one, valid only when the auditor's *strategy* guesses with one sign whatever
        the output (e.g. "the k highest scores are guessed in"), declared in advance; it is not
        inferred from the guesses, since a strategy that picks the sign from the output breaks
        it. Refused when the guesses have both signs.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> truths = rng.choice([-1, 1], 10_000)
    >>> scores = 2.0 * (truths > 0) + rng.standard_normal(10_000)   # 2-GDP canaries
    >>> guesses = np.zeros(10_000, dtype=int)
    >>> guesses[np.argsort(scores)[-200:]] = 1                       # the top 2 %
    >>> b = one_run_gdp_bound(guesses, truths, one_sided=True)         # the strategy: "in" only
    >>> 1.0 < b.mu_lb < 2.0
    True
    """
    g, s = check_guesses(guesses, truths)
    a = check_real(alpha, "alpha", low=0.0, high=1.0, low_open=True, high_open=True)
    d = check_real(delta, "delta", low=0.0, high=1.0, low_open=True, high_open=True)
    m, r = g.size, int(np.count_nonzero(g))
    v = int(np.count_nonzero((g == s) & (g != 0)))
    if not isinstance(one_sided, (bool, np.bool_)):
        raise TypeError(f"`one_sided` must be a bool; got {one_sided!r}")
    if one_sided and not (np.all(g >= 0) or np.all(g <= 0)):
        raise ValueError("`one_sided=True` needs every guess to have the same sign; got both +1 and -1")
    one_sided = bool(one_sided)
    lo = 0.0
    if gdp_one_run_rejects(0.0, m, r, v, a, one_sided=one_sided):
        hi = 1.0
        while hi < _MU_MAX and gdp_one_run_rejects(hi, m, r, v, a, one_sided=one_sided):
            lo, hi = hi, 2.0 * hi
        while hi - lo > 1e-9:
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if gdp_one_run_rejects(mid, m, r, v, a, one_sided=one_sided) else (lo, mid)
    return OneRunGDPBound(
        mu_lb=lo,
        epsilon_lb=gaussian_epsilon(lo, d) if lo > 0 else 0.0,
        delta=d,
        alpha=a,
        canaries=m,
        guesses=r,
        correct=v,
        one_sided=one_sided,
    )
