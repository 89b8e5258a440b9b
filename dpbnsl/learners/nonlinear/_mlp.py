"""The NOTEARS-MLP model (Zheng et al. 2020) as a flat parameter vector, hand-written gradients.

Node ``j`` is predicted by its own one-hidden-layer network ``[d, m, 1]`` with sigmoid units:

    H[:, j, :] = X W1[j]ᵀ + b1[j]            (n, m)   W1[j] of shape (m, d): inputs i → units of j
    f_j(X)     = σ(H[:, j, :]) W2[j] + b2[j]  (n,)

Parameter vector ``θ`` (length ``d·m·d + 2·d·m + d``), C order:

    θ = [ W1 (d, m, d) indexed [j, unit, i] | b1 (d, m) | W2 (d, m) | b2 (d) ]

The input weights of ``x_j`` into its own network (``W1[j, :, j]``, the self-loops) are kept at 0
by every solver. The weighted adjacency proxy is ``A[i, j] = Σ_m W1[j, m, i]²`` (the squared norm of
the weights from input i into node j's network) and the acyclicity ``h = tr(exp A) − d``; the
reported weights are ``√A``. All functions return ``(value, gradient)`` and loop over nothing but
the matrix products: the hidden layer of all d networks is one ``(n, d) @ (d, d·m)`` product.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.linalg
import scipy.optimize

__all__ = ["MLPLayout", "init_params", "squared_loss", "acyclicity", "adjacency", "l2_penalty"]


@dataclass(frozen=True)
class MLPLayout:
    """Offsets of the blocks of ``θ`` for ``d`` nodes with ``hidden`` units each."""

    d: int
    hidden: int

    @property
    def n_w1(self) -> int:
        return self.d * self.hidden * self.d

    @property
    def n_params(self) -> int:
        return self.n_w1 + 2 * self.d * self.hidden + self.d

    def unpack(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Views ``(W1 (d, m, d), b1 (d, m), W2 (d, m), b2 (d,))`` into ``theta``."""
        d, m, a = self.d, self.hidden, self.n_w1
        return (
            theta[:a].reshape(d, m, d),
            theta[a : a + d * m].reshape(d, m),
            theta[a + d * m : a + 2 * d * m].reshape(d, m),
            theta[a + 2 * d * m :],
        )

    @cached_property
    def self_loops(self) -> np.ndarray:
        """Read-only boolean mask of length ``n_w1``: True on the entries ``W1[j, :, j]``."""
        eye = np.eye(self.d, dtype=bool)
        mask = np.broadcast_to(eye[:, None, :], (self.d, self.hidden, self.d)).ravel().copy()
        mask.setflags(write=False)
        return mask

    @cached_property
    def weights(self) -> np.ndarray:
        """Read-only boolean mask of length ``n_params``: True on W1 and W2 (what ℓ2 penalises)."""
        mask = np.zeros(self.n_params, dtype=bool)
        mask[: self.n_w1] = True
        s = self.n_w1 + self.d * self.hidden
        mask[s : s + self.d * self.hidden] = True
        mask.setflags(write=False)
        return mask

    # --- the split form x = [W1⁺, W1⁻, rest], W1 = W1⁺ − W1⁻, W1⁺, W1⁻ ≥ 0 (for the ℓ1 term) ---

    def split_bounds(self) -> scipy.optimize.Bounds:
        w1 = np.where(self.self_loops, 0.0, np.inf)
        rest = np.full(self.n_params - self.n_w1, np.inf)
        return scipy.optimize.Bounds(
            np.concatenate([np.zeros(2 * w1.size), -rest]), np.concatenate([w1, w1, rest])
        )

    def to_split(self, theta: np.ndarray) -> np.ndarray:
        a = self.n_w1
        W1 = np.where(self.self_loops, 0.0, theta[:a])
        return np.concatenate([np.maximum(W1, 0.0), np.maximum(-W1, 0.0), theta[a:]])

    def from_split(self, x: np.ndarray) -> np.ndarray:
        a = self.n_w1
        return np.concatenate([x[:a] - x[a : 2 * a], x[2 * a :]])

    def grad_to_split(self, g: np.ndarray, lambda1: float) -> np.ndarray:
        """Gradient in the split form of ``F(θ) + λ1 Σ(W1⁺ + W1⁻)`` given ``g = ∇F(θ)``."""
        a = self.n_w1
        return np.concatenate([g[:a] + lambda1, -g[:a] + lambda1, g[a:]])


def init_params(layout: MLPLayout, rng: np.random.Generator) -> np.ndarray:
    """A random starting point with PyTorch's default scales (as NOTEARS-MLP's modules use).

    W1, b1 ~ U(±1/√d) (``nn.Linear(d, d·m)``), W2, b2 ~ U(±1/√m) (``LocallyConnected``); the
    self-loop weights are set to 0.
    """
    d, m = layout.d, layout.hidden
    theta = np.empty(layout.n_params)
    a = layout.n_w1 + d * m
    theta[:a] = rng.uniform(-1.0, 1.0, a) / np.sqrt(d)
    theta[a:] = rng.uniform(-1.0, 1.0, layout.n_params - a) / np.sqrt(m)
    theta[: layout.n_w1][layout.self_loops] = 0.0
    return theta


def squared_loss(
    theta: np.ndarray, X: np.ndarray, layout: MLPLayout, *, n: float | None = None
) -> tuple[float, np.ndarray]:
    """Least squares ``1/(2n) ‖X − f(X)‖_F²`` of all d networks and its gradient in ``θ``.

    Parameters
    ----------
    theta : array of shape (n_params,)
    X : array of shape (n_rows, d)
    n : normaliser (default ``n_rows``; the ADMM learner passes the total over participants)

    Forward: ``S = σ(X W1ᵀ + b1)`` as one (n_rows, d·m) array (column ``j·m + u`` is unit u of node
    j), ``f = S·W2`` summed per node, ``R = f + b2 − X``. Backward, with ``Rn = R/n`` repeated m
    times per node: ``∂W2 = Σ_rows S·Rn``, ``∂b2 = Σ_rows Rn``, ``G = Rn·W2·S(1 − S)``,
    ``∂b1 = Σ_rows G``, ``∂W1 = GᵀX``.
    """
    d, m = layout.d, layout.hidden
    rows = X.shape[0]
    n = rows if n is None else n
    a, dm = layout.n_w1, d * m
    S = X @ theta[:a].reshape(dm, d).T
    S += theta[a : a + dm]
    np.negative(S, out=S)  # σ(z) = 1 / (1 + e^−z), in place (several times faster than expit)
    with np.errstate(over="ignore"):
        np.exp(S, out=S)
    S += 1.0
    np.reciprocal(S, out=S)  # (rows, d·m)
    W2 = theta[a + dm : a + 2 * dm]
    R = (S * W2).reshape(rows, d, m).sum(axis=2)
    R += theta[a + 2 * dm :]
    R -= X
    value = 0.5 / n * float(np.vdot(R, R))
    R /= n
    Rm = np.repeat(R, m, axis=1)  # (rows, d·m)
    grad = np.empty(layout.n_params)
    grad[a + dm : a + 2 * dm] = np.einsum("ij,ij->j", S, Rm)
    grad[a + 2 * dm :] = R.sum(axis=0)
    Rm *= W2
    Rm *= S
    S -= 1.0
    Rm *= S  # = −G: Rn·W2·S·(S − 1)
    grad[:a] = -(Rm.T @ X).ravel()
    grad[a : a + dm] = -Rm.sum(axis=0)
    return value, grad


def adjacency(theta: np.ndarray, layout: MLPLayout) -> np.ndarray:
    """``A[i, j] = Σ_m W1[j, m, i]²`` (d, d): input i's squared weight norm into node j.

    ``theta`` may be the full vector or just its W1 block.
    """
    W1 = theta[: layout.n_w1].reshape(layout.d, layout.hidden, layout.d)
    return np.einsum("jmi,jmi->ij", W1, W1)


def acyclicity(theta: np.ndarray, layout: MLPLayout) -> tuple[float, np.ndarray]:
    """``h = tr(exp A) − d`` and its gradient in the W1 block only (length ``n_w1``).

    ``theta`` may be the full vector or just its W1 block (only its first ``n_w1`` entries count).
    ``∂h/∂A = exp(A)ᵀ``, so ``∂h/∂W1[j, m, i] = 2 W1[j, m, i] · exp(A)[j, i]``.
    """
    W1 = theta[: layout.n_w1].reshape(layout.d, layout.hidden, layout.d)
    E = scipy.linalg.expm(np.einsum("jmi,jmi->ij", W1, W1))
    return float(np.trace(E)) - layout.d, (2.0 * W1 * E[:, None, :]).ravel()


def l2_penalty(theta: np.ndarray, layout: MLPLayout) -> tuple[float, np.ndarray]:
    """``½ ‖(W1, W2)‖²`` (biases excluded, as in NOTEARS-MLP) and its gradient (length n_params)."""
    g = np.where(layout.weights, theta, 0.0)
    return 0.5 * float(np.dot(g, g)), g
