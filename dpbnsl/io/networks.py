"""Benchmark Bayesian networks of the bnlearn repository, shipped with the package.

Two linear-Gaussian networks whose parameters were fitted to real data — ``"ecoli70"`` (46 nodes,
70 arcs; Schäfer & Strimmer 2005) and ``"magic-niab"`` (44 nodes, 66 arcs; Scutari, Howell,
Balding & Mackay 2014) — and three discrete ones — ``"alarm"`` (37 / 46), ``"child"`` (20 / 25)
and ``"insurance"`` (27 / 52). The files sit in ``dpbnsl/data/bnlearn/`` with their licence
(Creative Commons Attribution-Share Alike, as the bnlearn repository distributes them) and
attribution; each is checked against its recorded SHA-256 whenever it is read, and nothing is
downloaded.

:func:`load_network` returns a :class:`GaussianNetwork` (DAG, coefficients, intercepts, residual
variances, population moments, a sampler) or a
:class:`~dpbnsl.simulation.discrete.DiscreteBN`; :func:`sample_network` draws a federated sample
from either.

Scales. A Gaussian network's population mean and standard deviations follow from its published
parameters, so centring or standardising a sample with them (``standardise=True``) uses public
numbers only and leaks nothing about the sample. Standardising with the sample's own moments would
not be public in a private run.
"""

from __future__ import annotations

import json
import types
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np

from .._validation import as_generator, check_choice, check_int, readonly_copy
from ..graphs import topological_order
from ..simulation.discrete import DiscreteBN, parse_bif
from ..simulation.linear import SimulatedData, sem_covariance
from ..simulation.partition import split
from ._packaged import read_verified

__all__ = [
    "DISCRETE_NETWORKS",
    "GAUSSIAN_NETWORKS",
    "NETWORKS",
    "NETWORK_SHA256",
    "GaussianNetwork",
    "NetworkChecksumError",
    "NetworkSample",
    "load_network",
    "sample_network",
]

GAUSSIAN_NETWORKS = ("ecoli70", "magic-niab")
DISCRETE_NETWORKS = ("alarm", "child", "insurance")
NETWORKS = GAUSSIAN_NETWORKS + DISCRETE_NETWORKS

_FILES = {name: f"{name}.json" for name in GAUSSIAN_NETWORKS} | {
    name: f"{name}.bif.gz" for name in DISCRETE_NETWORKS
}

#: SHA-256 of each packaged file's content (after gunzip), checked on every read.
NETWORK_SHA256 = types.MappingProxyType(
    {
        "ecoli70.json": "e3cfe98302c885deb4f13f012e9209b03ef803e718ba7ca666fb09324b2ad921",
        "magic-niab.json": "1694a2ccae07a5cee0a1fa9e3131f3f2d552a79c825fddecfaa996624e629d6d",
        "alarm.bif.gz": "701e6c561f71b55669070c29614f0724b761289aa2c4a35bcc97b638ee881fa2",
        "child.bif.gz": "432c22e661cd0e8235c8d95599ac22ccc261002459f5c4e6e7235b057908fe6e",
        "insurance.bif.gz": "39f9e706e9208e720a55a98b6811188b33a7292335a53373a9343a0c7065dab4",
    }
)

#: The original publication of each network (full references on the docs' references page).
REFERENCES = types.MappingProxyType(
    {
        "ecoli70": "Schäfer & Strimmer (2005), E. coli gene expression",
        "magic-niab": "Scutari, Howell, Balding & Mackay (2014), MAGIC wheat population (NIAB)",
        "alarm": "Beinlich, Suermondt, Chavez & Cooper (1989), ALARM patient monitoring",
        "child": "Spiegelhalter & Cowell (1992), CHILD congenital heart disease",
        "insurance": "Binder, Koller, Russell & Kanazawa (1997), car insurance risk",
    }
)


class NetworkChecksumError(ValueError):
    """A packaged network file is unreadable or does not match its recorded SHA-256."""


def _read(name: str) -> bytes:
    file = _FILES[name]
    directory = resources.files("dpbnsl") / "data" / "bnlearn"
    return read_verified(
        directory,
        file,
        NETWORK_SHA256[file],
        label="network",
        missing=FileNotFoundError,
        damaged=NetworkChecksumError,
    )


@dataclass(frozen=True, eq=False)
class GaussianNetwork:
    """A linear-Gaussian Bayesian network: ``x_j = b_j + Σ_i W[i, j] x_i + e_j``,
    ``e_j ~ N(0, variances[j])`` independent.

    Attributes
    ----------
    name : str
    names : tuple of d str, the variables in file order
    W : read-only float array of shape (d, d), ``W[i, j]`` the coefficient of parent i in j
    intercepts : read-only float array of shape (d,), ``b``
    variances : read-only float array of shape (d,), the residual variances
    """

    name: str
    names: tuple
    W: np.ndarray
    intercepts: np.ndarray
    variances: np.ndarray

    def __post_init__(self) -> None:
        d = len(self.names)
        W = np.asarray(self.W, dtype=float)
        b = np.asarray(self.intercepts, dtype=float)
        v = np.asarray(self.variances, dtype=float)
        if W.shape != (d, d) or b.shape != (d,) or v.shape != (d,):
            raise ValueError(f"a network of {d} variables needs W (d, d), intercepts (d,) and variances (d,)")
        if not (np.isfinite(W).all() and np.isfinite(b).all() and np.isfinite(v).all()) or np.any(v <= 0):
            raise ValueError("the coefficients and intercepts must be finite and the residual variances > 0")
        topological_order(W)  # a cycle raises
        for attr, arr in (("W", W), ("intercepts", b), ("variances", v)):
            object.__setattr__(self, attr, readonly_copy(arr))

    @property
    def d(self) -> int:
        """The number of variables."""
        return len(self.names)

    @property
    def B(self) -> np.ndarray:
        """The 0/1 adjacency, ``B[i, j] = 1`` for the arc ``i -> j``."""
        return (self.W != 0).astype(int)

    def mean(self) -> np.ndarray:
        """The population mean ``b (I − W)⁻¹`` (rows are samples)."""
        return np.linalg.solve((np.eye(self.d) - self.W).T, self.intercepts)

    def covariance(self) -> np.ndarray:
        """The population covariance ``(I − W)⁻ᵀ diag(variances) (I − W)⁻¹``."""
        return sem_covariance(self.W, self.variances)

    def scale(self) -> np.ndarray:
        """The population standard deviation of each variable."""
        return np.sqrt(np.diag(self.covariance()))

    def public_bounds(self) -> dict[str, float]:
        """Public clipping bounds for private learners on this network's centred samples, read
        off the published parameters only (never a sample):

        - ``feature_bound`` = 16·max_a Σ_aa, a bound on x_ia² (a value 4 population standard
          deviations from its mean; DP-Fed-Sparse-BNSL);
        - ``clip_norm`` = 2·√(tr Σ), twice the root-mean-square row norm (the covariance releases).
        """
        S = self.covariance()
        return {
            "feature_bound": float(16.0 * np.max(np.diag(S))),
            "clip_norm": float(2.0 * np.sqrt(np.trace(S))),
        }

    def standardised(self) -> GaussianNetwork:
        """The same network on centred variables of unit population variance:
        ``W'[i, j] = W[i, j]·s_i/s_j``, residual variances ``v_j/s_j²``, intercepts 0."""
        s = self.scale()
        return GaussianNetwork(
            self.name, self.names, self.W * s[:, None] / s[None, :], np.zeros(self.d), self.variances / s**2
        )

    def sample(
        self, n: int, *, centre: bool = True, rng: np.random.Generator | int | None = None
    ) -> np.ndarray:
        """``n`` rows drawn in topological order; with ``centre`` (default) the population mean
        (a function of the published parameters) is subtracted."""
        n = check_int(n, "n", low=1)
        rng = as_generator(rng)
        X = rng.standard_normal((n, self.d)) * np.sqrt(self.variances)
        if not centre:
            X += self.intercepts
        for j in topological_order(self.W):
            parents = np.flatnonzero(self.W[:, j])
            X[:, j] += X[:, parents] @ self.W[parents, j]
        return X


def _gaussian(name: str) -> GaussianNetwork:
    try:
        spec = json.loads(_read(name))
        names = tuple(str(v) for v in spec["nodes"])
        index = {v: k for k, v in enumerate(names)}
        d = len(names)
        W, b, v = np.zeros((d, d)), np.zeros(d), np.zeros(d)
        for child, cpd in spec["cpds"].items():
            j = index[child]
            coef = cpd["coefficients"]
            b[j] = float(coef["(Intercept)"][0])
            v[j] = float(cpd["variance"][0])
            for parent in cpd["parents"]:
                W[index[parent], j] = float(coef[parent][0])
        arcs = {(index[p], index[c]) for p, c in spec["arcs"]}
    except (KeyError, TypeError, ValueError, IndexError) as err:  # pragma: no cover - digest-checked file
        raise NetworkChecksumError(f"The packaged network {name} is malformed ({err!r})") from err
    net = GaussianNetwork(name, names, W, b, v)
    if set(zip(*np.nonzero(net.W))) != arcs:  # pragma: no cover - digest-checked file
        raise NetworkChecksumError(f"The packaged network {name}: coefficients and arcs disagree")
    return net


def load_network(name: str) -> GaussianNetwork | DiscreteBN:
    """One of the packaged networks (:data:`NETWORKS`, module docstring).

    Returns
    -------
    GaussianNetwork for ``"ecoli70"`` and ``"magic-niab"``;
    :class:`~dpbnsl.simulation.discrete.DiscreteBN` for ``"alarm"``, ``"child"`` and ``"insurance"``.

    Examples
    --------
    >>> net = load_network("ecoli70")
    >>> net.d, int(net.B.sum())
    (46, 70)
    >>> bn = load_network("child")
    >>> bn.d, int(bn.adjacency.sum())
    (20, 25)
    """
    name = check_choice(name, "name", NETWORKS)
    if name in GAUSSIAN_NETWORKS:
        return _gaussian(name)
    return parse_bif(_read(name).decode("utf-8"), where=f"packaged network {name}")


@dataclass(frozen=True)
class NetworkSample(SimulatedData):
    """Output of :func:`sample_network`: :class:`~dpbnsl.simulation.SimulatedData`'s fields
    (``B_true``, ``W_true``, ``X``, ``participants``) and

    Attributes
    ----------
    columns : tuple of d str, the variable names
    network : GaussianNetwork or DiscreteBN, the network sampled (the standardised one when
        ``standardise=True``)
    """

    columns: tuple = ()
    network: Any = None


def sample_network(
    name: str,
    n: int,
    *,
    participants: int = 10,
    standardise: bool = False,
    rng: np.random.Generator | int | None = None,
) -> NetworkSample:
    """``n`` rows of a packaged network, split into equal contiguous shards.

    Parameters
    ----------
    name : one of :data:`NETWORKS`
    n : int >= participants
    participants : int >= 1
    standardise : bool, default False
        Gaussian networks only: divide each (centred) variable by its population standard deviation
        (public: a function of the published parameters); ``W_true`` is then the standardised
        network's coefficients. Gaussian samples are always centred with the population mean.
    rng : None, int or numpy Generator

    Returns
    -------
    NetworkSample
        Gaussian: ``X`` float, ``W_true`` the coefficients. Discrete: ``X`` integer state codes,
        ``W_true`` the 0/1 adjacency as floats (a discrete network has no weights).

    Examples
    --------
    >>> data = sample_network("magic-niab", 2000, participants=4, standardise=True, rng=0)
    >>> data.X.shape, len(data.participants), bool(abs(data.X.std(axis=0) - 1).max() < 0.1)
    ((2000, 44), 4, True)
    """
    name = check_choice(name, "name", NETWORKS)
    participants = check_int(participants, "participants", low=1)
    n = check_int(n, "n", low=participants)
    if not isinstance(standardise, (bool, np.bool_)):
        raise TypeError(f"`standardise` must be a bool; got {standardise!r}")
    net = load_network(name)
    rng = as_generator(rng)
    if isinstance(net, GaussianNetwork):
        if standardise:
            net = net.standardised()
        X: np.ndarray = net.sample(n, rng=rng)
        W = net.W.copy()
        B = net.B
    else:
        if standardise:
            raise ValueError(
                f"`standardise` applies to the Gaussian networks {GAUSSIAN_NETWORKS}; {name} is discrete"
            )
        X = np.asarray(net.sample(n, rng=rng))
        B = net.adjacency
        W = B.astype(float)
    return NetworkSample(
        B_true=B, W_true=W, X=X, participants=split(X, participants), columns=tuple(net.names), network=net
    )
