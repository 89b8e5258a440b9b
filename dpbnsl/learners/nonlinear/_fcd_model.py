"""The local model of DS-FCD / AS-FCD: loss, hand-written gradient, Adam.

A participant's parameters are one flat vector ``θ = [U | Φ]``: the graph logits ``U`` (d×d, first
``d²`` entries, row-major) and the mechanism parameters ``Φ`` (the rest). Two mechanisms:

* ``"mlp"`` (Sec. 4.1, Eq. 8): ``M = σ((U + G)/τ)`` with the diagonal set to 0, ``G = g¹ − g⁰``
  (difference of two standard Gumbels, i.e. standard Logistic); node ``j`` is predicted by its own
  MLP ``x̂_j = Φ_j(M[:, j] ∘ x)`` with ``layers`` hidden layers of ``hidden`` LeakyReLU(0.05) units
  and a linear output. The loss minimised by a participant with ``n`` rows is::

      L = 1/(2n) Σ_i Σ_j (x_ij − x̂_ij)² + λ Σ_ab M_ab + α h(M) + ρ/2 h(M)²

* ``"linear"`` (Sec. 5, Table 1; the details follow the authors' code): the model is one weighted
  matrix ``W = U`` (diagonal 0) and ``Φ`` is empty::

      L = 1/(2n) ‖X − XW‖²_F + λ Σ_ab |W_ab| + α h(W) + ρ/2 h(W)²

``h`` is ``tr(exp(A∘A)) − d`` (``acyclicity="exp-sq"``, the authors' code) or ``tr(exp(A)) − d``
(``"exp"``, the paper's Eq. 5), with ``A = M`` or ``W``.

Speed (all d node networks of a participant are evaluated as one batch of shape (d, n, ·)):

* the first layer never forms the masked input: ``(m_j ∘ x) W1_j = x (diag(m_j) W1_j)``;
* activations are stored as (node, unit, sample), so every layer is a batch of d products
  ``W_kᵀ H_{k−1}`` with the long sample axis last (far faster in BLAS than (sample, unit));
* the LeakyReLU is ``H = Z ∘ s(Z)`` with the slope field ``s = 0.05 + 0.95·[Z > 0]`` kept for the
  backward pass ``∂Z = ∂H ∘ s``; buffers are reused across steps (``Workspace``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import scipy.linalg

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

__all__ = ["Model", "Parts", "Workspace", "Adam", "acyclicity_value", "sigmoid"]

SLOPE = 0.05  # LeakyReLU negative slope (the authors' code)


def sigmoid(z: np.ndarray) -> np.ndarray:
    """Numerically stable logistic function."""
    e = np.exp(-np.abs(z))
    return np.where(z >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def acyclicity_value(A: np.ndarray, form: str) -> tuple[float, np.ndarray]:
    """``h(A)`` and ``∂h/∂A``: ``tr e^{A∘A} − d`` with gradient ``2A∘(e^{A∘A})ᵀ`` (``"exp-sq"``),
    or ``tr e^{A} − d`` with gradient ``(e^{A})ᵀ`` (``"exp"``)."""
    if form == "exp-sq":
        E = scipy.linalg.expm(A * A)
        return float(np.trace(E)) - A.shape[0], 2.0 * A * E.T
    E = scipy.linalg.expm(A)
    return float(np.trace(E)) - A.shape[0], E.T.copy()


@dataclass(frozen=True)
class Parts:
    """The terms of one loss evaluation: data term, ℓ1 sum, acyclicity ``h`` and the total."""

    mse: float
    l1: float
    h: float
    total: float


class Workspace:
    """One participant's data in the compute dtype plus reusable buffers for the MLP passes.

    Buffers hold per layer the activations and slope fields, shape (d, hidden, n).
    """

    def __init__(self, X: np.ndarray, model: Model, dtype: DTypeLike) -> None:
        n, d = X.shape
        self.n, self.dtype = n, np.dtype(dtype)
        self.X = np.array(X, dtype=self.dtype)
        self.XT = np.ascontiguousarray(self.X.T)
        if model.mechanism == "mlp":
            shape = (d, model.hidden, n)
            self.acts = [np.empty(shape, self.dtype) for _ in range(model.layers)]
            self.slopes = [np.empty(shape, self.dtype) for _ in range(model.layers)]
            self.grads = [np.empty(shape, self.dtype) for _ in range(2)]


class Model:
    """Shapes, initialisation, loss and gradient of one participant's model.

    Parameters
    ----------
    d : int, number of variables
    mechanism : {"mlp", "linear"}
    hidden, layers : int
        MLP width and number of hidden layers (ignored for ``"linear"``).
    """

    def __init__(self, d: int, mechanism: str, hidden: int = 16, layers: int = 4) -> None:
        self.d, self.mechanism, self.hidden, self.layers = d, mechanism, hidden, layers
        H = hidden
        self.shapes = (
            []
            if mechanism == "linear"
            else ([(d, d, H), (d, H)] + [(d, H, H), (d, H)] * (layers - 1) + [(d, H), (d,)])
        )
        self.n_graph = d * d
        self._slices, pos = [], d * d
        for s in self.shapes:
            k = int(np.prod(s))
            self._slices.append((pos, pos + k, s))
            pos += k
        self.n_phi = pos - d * d
        self.size = pos
        self.offdiag = ~np.eye(d, dtype=bool)

    def views(self, theta: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
        """``U`` (d, d) and the Φ tensors as views into the flat vector ``theta`` (size,)."""
        d = self.d
        return theta[: d * d].reshape(d, d), [theta[a:b].reshape(s) for a, b, s in self._slices]

    def init(self, rng: np.random.Generator) -> np.ndarray:
        """Initial ``θ``: ``U = 0``; MLP weights Xavier-uniform (fan-in ``d − 1`` in the first
        layer, whose self input is masked), biases 0."""
        theta = np.zeros(self.size)
        if self.mechanism == "mlp":
            _, phi = self.views(theta)
            d, H = self.d, self.hidden
            weights = phi[0:-2:2] + [phi[-2]]
            fans = [(max(d - 1, 1), H)] + [(H, H)] * (self.layers - 1) + [(H, 1)]
            for w, (fan_in, fan_out) in zip(weights, fans):
                lim = np.sqrt(6.0 / (fan_in + fan_out))
                w[...] = rng.uniform(-lim, lim, w.shape)
        return theta

    def mask(self, U: np.ndarray, G: np.ndarray | None, tau: float) -> np.ndarray:
        """Soft adjacency ``σ((U + G)/τ)`` (``G = None``: noise-free ``σ(U/τ)``) with zero diagonal;
        for ``"linear"`` simply ``U`` with zero diagonal."""
        if self.mechanism == "linear":
            return np.where(self.offdiag, U, 0.0)
        Z = U if G is None else U + G
        return np.where(self.offdiag, sigmoid(Z / tau), 0.0)

    def sample_noise(self, rng: np.random.Generator) -> np.ndarray | None:
        """One draw of ``G = g¹ − g⁰`` (standard Logistic, d×d); ``None`` for ``"linear"``."""
        return None if self.mechanism == "linear" else rng.logistic(size=(self.d, self.d))

    def loss_grad(
        self,
        theta: np.ndarray,
        ws: Workspace,
        G: np.ndarray | None,
        *,
        tau: float,
        lambda1: float,
        alpha: float,
        rho: float,
        acyclicity: str,
    ) -> tuple[Parts, np.ndarray]:
        """The loss ``L(θ)`` for the fixed noise ``G`` and its gradient.

        Parameters
        ----------
        theta : array of shape (size,)
        ws : Workspace of the participant's data (n, d)
        G : array of shape (d, d), or None for ``"linear"``

        Returns
        -------
        parts : Parts
        grad : array of shape (size,)
        """
        grad = np.zeros_like(theta)
        U, phi = self.views(theta)
        gU, gphi = self.views(grad)
        M = self.mask(U, G, tau)
        if self.mechanism == "linear":
            R = ws.X - ws.X @ M.astype(ws.dtype)
            mse = 0.5 / ws.n * float(np.einsum("ij,ij->", R, R, dtype=float))
            l1 = float(np.abs(M).sum())
            dM = -(ws.XT @ R).astype(float) / ws.n + lambda1 * np.sign(M)
        else:
            mse, dM = self._mlp(ws, M, phi, gphi)
            l1 = float(M.sum())
            dM += lambda1
        h, dh = acyclicity_value(M, acyclicity)
        dM += (alpha + rho * h) * dh
        if self.mechanism == "mlp":
            dM *= M * (1.0 - M) / tau  # ∂M/∂U of the Gumbel-sigmoid
        gU[...] = np.where(self.offdiag, dM, 0.0)
        total = mse + lambda1 * l1 + alpha * h + 0.5 * rho * h * h
        return Parts(mse, l1, h, total), grad

    def _mlp(
        self, ws: Workspace, M: np.ndarray, phi: list[np.ndarray], gphi: list[np.ndarray]
    ) -> tuple[float, np.ndarray]:
        """Forward and backward pass of the data term in the (node, unit, sample) layout. Fills
        ``gphi`` with ∂mse/∂Φ; returns the data term ``1/(2n) Σ r²`` and ∂mse/∂M (d, d)."""
        dt = ws.dtype
        W1T = np.ascontiguousarray((M.T[:, :, None] * phi[0]).transpose(0, 2, 1), dtype=dt)
        WT = [W1T] + [
            np.ascontiguousarray(phi[2 * k].transpose(0, 2, 1), dtype=dt) for k in range(1, self.layers)
        ]
        prev = ws.XT[None]  # (1, d_in, n)
        for k in range(self.layers):  # forward: Z_k = W_kᵀ H_{k−1} + b_k
            Z, s = ws.acts[k], ws.slopes[k]
            np.matmul(WT[k], prev, out=Z)
            Z += phi[2 * k + 1].astype(dt)[:, :, None]
            np.greater(Z, 0, out=s, casting="unsafe")
            s *= 1.0 - SLOPE
            s += SLOPE
            Z *= s  # Z now holds the activation H_k
            prev = Z
        wo = phi[-2].astype(dt)
        out = np.matmul(wo[:, None, :], prev)[:, 0, :]  # (d, n)
        out += phi[-1].astype(dt)[:, None]
        R = ws.XT - out  # residuals, (d, n)
        mse = 0.5 / ws.n * float(np.einsum("ij,ij->", R, R, dtype=float))
        dout = R * np.asarray(-1.0 / ws.n, dtype=dt)  # ∂mse/∂x̂
        gphi[-1][...] = dout.sum(axis=1)
        gphi[-2][...] = np.matmul(prev, dout[:, :, None])[:, :, 0]
        dH = np.multiply(wo[:, :, None], dout[:, None, :], out=ws.grads[0])
        cur = 0
        for k in range(self.layers - 1, -1, -1):  # backward
            dH *= ws.slopes[k]  # ∂mse/∂Z_k
            gphi[2 * k + 1][...] = dH.sum(axis=2)
            if k:
                gphi[2 * k][...] = np.matmul(ws.acts[k - 1], np.swapaxes(dH, 1, 2))
                cur = 1 - cur
                dH = np.matmul(np.swapaxes(WT[k], 1, 2), dH, out=ws.grads[cur])
        dA = np.matmul(ws.XT[None], np.swapaxes(dH, 1, 2))  # (d, d_in, H)
        gphi[0][...] = M.T[:, :, None] * dA
        dM = np.einsum("jih,jih->ij", phi[0], dA, dtype=float)
        return mse, dM


class Adam:
    """Adam (Kingma & Ba 2015) on a flat vector, updated in place; the state is kept for the whole
    run, never reset or averaged (the authors' code)::

        θ ← θ − lr · m̂ / (√v̂ + ε),  m̂ = m/(1 − β₁ᵗ),  v̂ = v/(1 − β₂ᵗ)
    """

    def __init__(
        self, size: int, lr: float, beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-8
    ) -> None:
        self.lr, self.beta1, self.beta2, self.eps = lr, beta1, beta2, eps
        self.m = np.zeros(size)
        self.v = np.zeros(size)
        self.t = 0

    def step(self, theta: np.ndarray, grad: np.ndarray) -> None:
        self.t += 1
        self.m *= self.beta1
        self.m += (1.0 - self.beta1) * grad
        self.v *= self.beta2
        self.v += (1.0 - self.beta2) * grad * grad
        c1 = 1.0 - self.beta1**self.t
        c2 = 1.0 - self.beta2**self.t
        theta -= (self.lr / c1) * self.m / (np.sqrt(self.v / c2) + self.eps)
