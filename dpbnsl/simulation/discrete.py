"""Discrete Bayesian networks: random ones (Dirichlet CPTs), BIF files, and forward sampling.

A network stores, for node ``j`` with parents ``pa(j) = (p_1, ..., p_m)`` (ascending indices), the
conditional probability table ``cpts[j]`` of shape ``(r_{p_1}, ..., r_{p_m}, r_j)``:
``cpts[j][a_1, ..., a_m, x] = P(X_j = x | X_{p_1} = a_1, ..., X_{p_m} = a_m)``. Samples are integer
category codes ``0 .. r_j − 1`` (the index of the state in ``states[j]``).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .._validation import as_generator, check_int, check_real, readonly_copy
from ..graphs import topological_order
from .linear import simulate_dag

__all__ = ["DiscreteBN", "DiscreteData", "random_discrete_bn", "simulate_discrete", "read_bif", "parse_bif"]


@dataclass(frozen=True, eq=False)
class DiscreteBN:
    """A discrete Bayesian network (see the module docstring for the CPT layout).

    Attributes
    ----------
    names : tuple of d str
    states : tuple of d tuples of str (at least 2 states each)
    parents : tuple of d tuples of int, ascending parent indices
    cpts : tuple of d read-only float arrays; rows are normalised to sum to 1 on construction
        (a row must already sum to 1 within 1e-3, the rounding of published BIF files)
    """

    names: tuple
    states: tuple
    parents: tuple
    cpts: tuple

    def __post_init__(self) -> None:
        d = len(self.names)
        if not (len(self.states) == len(self.parents) == len(self.cpts) == d):
            raise ValueError("`names`, `states`, `parents` and `cpts` must have one entry per node")
        if len(set(self.names)) != d:
            raise ValueError(f"`names` must be distinct; got {list(self.names)}")
        states = tuple(tuple(str(s) for s in st) for st in self.states)
        for name, st in zip(self.names, states):
            if len(st) < 2 or len(set(st)) != len(st):
                raise ValueError(f"variable {name!r} needs at least 2 distinct states; got {list(st)}")
        parents = tuple(tuple(sorted(int(p) for p in pa)) for pa in self.parents)
        B = np.zeros((d, d), dtype=int)
        cpts = []
        for j, (pa, cpt) in enumerate(zip(parents, self.cpts)):
            if any(not 0 <= p < d or p == j for p in pa) or len(set(pa)) != len(pa):
                raise ValueError(f"variable {self.names[j]!r} has invalid parents {list(pa)}")
            B[list(pa), j] = 1
            shape = tuple(len(states[p]) for p in pa) + (len(states[j]),)
            cpt = np.asarray(cpt, dtype=float)
            if cpt.shape != shape:
                raise ValueError(
                    f"CPT of {self.names[j]!r} has shape {cpt.shape}; expected {shape} "
                    f"(parent states ..., own states)"
                )
            sums = cpt.sum(axis=-1)
            if not np.all(np.isfinite(cpt)) or np.any(cpt < 0) or np.any(np.abs(sums - 1) > 1e-3):
                raise ValueError(
                    f"CPT of {self.names[j]!r} must hold probabilities whose rows sum "
                    f"to 1; row sums range over [{sums.min():g}, {sums.max():g}]"
                )
            cpts.append(readonly_copy(cpt / sums[..., None]))
        try:
            order = topological_order(B)
        except ValueError:
            raise ValueError(
                "the parent sets form a directed cycle; a Bayesian network needs a DAG"
            ) from None
        object.__setattr__(self, "names", tuple(str(n) for n in self.names))
        object.__setattr__(self, "states", states)
        object.__setattr__(self, "parents", parents)
        object.__setattr__(self, "cpts", tuple(cpts))
        self._order: tuple[int, ...]  # a declaration only (not a field): set just below
        object.__setattr__(self, "_order", tuple(order))

    @property
    def d(self) -> int:
        return len(self.names)

    @property
    def levels(self) -> tuple[int, ...]:
        """Number of states of each variable."""
        return tuple(len(s) for s in self.states)

    @property
    def adjacency(self) -> np.ndarray:
        """0/1 int matrix, ``[i, j] = 1`` iff ``i`` is a parent of ``j``."""
        B = np.zeros((self.d, self.d), dtype=int)
        for j, pa in enumerate(self.parents):
            B[list(pa), j] = 1
        return B

    def sample(
        self, n: int, *, rng: np.random.Generator | int | None = None, as_frame: bool = False
    ) -> np.ndarray | pd.DataFrame:
        """Draw ``n`` samples by forward (ancestral) sampling.

        Returns an int array of shape (n, d) of state indices, or with ``as_frame=True`` a
        DataFrame with the variable names as columns (still integer codes).
        """
        n = check_int(n, "n", low=0)
        rng = as_generator(rng)
        X = np.zeros((n, self.d), dtype=np.int64)
        for j in self._order:
            pa = self.parents[j]
            cpt = self.cpts[j].reshape(-1, len(self.states[j]))
            config = (
                np.ravel_multi_index(tuple(X[:, p] for p in pa), self.cpts[j].shape[:-1])
                if pa
                else np.zeros(n, dtype=np.int64)
            )
            cum = np.cumsum(cpt, axis=1)[config]
            u = rng.random(n)
            X[:, j] = np.minimum((u[:, None] >= cum).sum(axis=1), cpt.shape[1] - 1)
        return pd.DataFrame(X, columns=list(self.names)) if as_frame else X

    def __repr__(self) -> str:
        return f"DiscreteBN(d={self.d}, edges={int(self.adjacency.sum())}, levels={self.levels})"


def _check_levels(levels: Any, d: int) -> list[int]:
    if isinstance(levels, (int, np.integer)) and not isinstance(levels, bool):
        return [check_int(levels, "levels", low=2)] * d
    if isinstance(levels, (str, bytes)) or np.ndim(levels) != 1 or len(levels) != d:
        raise ValueError(f"`levels` must be an int >= 2 or a sequence of d = {d} ints; got {levels!r}")
    return [check_int(v, f"levels[{k}]", low=2) for k, v in enumerate(levels)]


def random_discrete_bn(
    d: int,
    *,
    s0: int,
    levels: int | Sequence[int] = 2,
    graph_type: str = "ER",
    concentration: float = 1.0,
    rng: np.random.Generator | int | None = None,
) -> DiscreteBN:
    """A random discrete network: a random DAG and Dirichlet-distributed CPT rows.

    Parameters
    ----------
    d : int >= 1
    s0 : int, number of edges (see :func:`dpbnsl.simulation.simulate_dag`)
    levels : int >= 2 or sequence of d ints >= 2, default 2
        Number of states per node.
    graph_type : {"ER", "SF"}
    concentration : float > 0, default 1
        Every CPT row (one per parent configuration) is drawn from
        ``Dirichlet(concentration, ..., concentration)``; 1 is uniform on the simplex, small values
        give near-deterministic (strong) dependencies.
    rng : None, int or numpy Generator
        The graph and the CPTs use two spawned streams.
    """
    d = check_int(d, "d", low=1)
    levs = _check_levels(levels, d)
    conc = check_real(concentration, "concentration", low=0.0, low_open=True)
    graph_rng, cpt_rng = as_generator(rng).spawn(2)
    B = simulate_dag(d, s0=s0, graph_type=graph_type, rng=graph_rng)
    parents, cpts = [], []
    for j in range(d):
        pa = tuple(int(p) for p in np.flatnonzero(B[:, j]))
        shape = tuple(levs[p] for p in pa)
        rows = cpt_rng.dirichlet(np.full(levs[j], conc), size=math.prod(shape))
        parents.append(pa)
        cpts.append(rows.reshape(shape + (levs[j],)))
    return DiscreteBN(
        names=tuple(f"X{j}" for j in range(d)),
        states=tuple(tuple(str(s) for s in range(r)) for r in levs),
        parents=tuple(parents),
        cpts=tuple(cpts),
    )


@dataclass(frozen=True)
class DiscreteData:
    """Output of :func:`simulate_discrete`: the network, its 0/1 adjacency and the samples
    (int array of shape (n, d) of state indices)."""

    bn: DiscreteBN
    B_true: np.ndarray
    X: np.ndarray


def simulate_discrete(
    d: int,
    n: int,
    *,
    s0: int | None = None,
    levels: int | Sequence[int] = 2,
    graph_type: str = "ER",
    concentration: float = 1.0,
    rng: np.random.Generator | int | None = None,
) -> DiscreteData:
    """Random discrete network (:func:`random_discrete_bn`, ``s0`` defaults to ``d`` edges capped
    at ``d(d-1)/2``) and ``n`` forward samples; the network and the samples use two streams.

    Examples
    --------
    >>> sim = simulate_discrete(6, 500, levels=3, rng=0)
    >>> sim.X.shape, int(sim.X.max()) <= 2, int(sim.B_true.sum())
    ((500, 6), True, 6)
    """
    d = check_int(d, "d", low=1)
    if s0 is None:
        s0 = min(d, d * (d - 1) // 2)
    net_rng, data_rng = as_generator(rng).spawn(2)
    bn = random_discrete_bn(
        d, s0=s0, levels=levels, graph_type=graph_type, concentration=concentration, rng=net_rng
    )
    return DiscreteData(bn=bn, B_true=bn.adjacency, X=bn.sample(n, rng=data_rng))


# ------------------------------------------------------------------------------------------ BIF

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_HEADER = re.compile(r"\b(variable|probability)\s*([^{]*?)\s*\{")
_TYPE = re.compile(r"type\s+discrete\s*\[\s*(\d+)\s*\]\s*=?\s*\{([^}]*)\}")
_PARENTS = re.compile(r"^\(\s*([^|)]+?)\s*(?:\|\s*([^)]*?))?\s*\)$", re.S)
_ROW = re.compile(r"\(([^)]*)\)\s*([^;]*);")
_TABLE = re.compile(r"\b(table|default)\s+([^;]*);")


def _blocks(text: str, path: str | os.PathLike[str]) -> list[tuple[str, str, str]]:
    """``(keyword, header, body)`` of every top-level ``variable``/``probability`` block."""
    out, pos = [], 0
    while (m := _HEADER.search(text, pos)) is not None:
        depth, k = 1, m.end()
        while depth and k < len(text):
            depth += {"{": 1, "}": -1}.get(text[k], 0)
            k += 1
        if depth:
            raise ValueError(f"{path}: unbalanced braces in the block starting {m.group(0)!r}")
        out.append((m.group(1), m.group(2).strip(), text[m.end() : k - 1]))
        pos = k
    return out


def _tokens(text: str) -> list[str]:
    return [t.strip().strip('"') for t in re.split(r"[,\s]+", text.strip()) if t.strip()]


def _floats(text: str, where: str) -> np.ndarray:
    try:
        return np.array([float(t) for t in _tokens(text)])
    except ValueError:
        raise ValueError(f"{where}: expected numbers, got {text.strip()!r}") from None


def read_bif(path: str | os.PathLike[str]) -> DiscreteBN:
    """Read a discrete Bayesian network from a BIF file (the format of the bnlearn repository).

    Supported: ``variable NAME { type discrete [ k ] { s1, s2, ... }; }`` (properties ignored;
    ``=`` before the states and quoted names accepted), and ``probability ( CHILD | P1, P2 ) { ... }``
    blocks holding either one line per parent configuration, ``( a1, a2 ) p1, p2, ...;``, with
    an optional ``default p1, p2, ...;`` for configurations not listed, or a ``table`` line. A
    ``table`` lists the probabilities child-state-major, i.e. the child's state varies slowest and
    the last parent fastest (the reading of pgmpy's BIF reader). ``//`` and ``/* */`` comments are
    skipped. Variables appear in the file's order.

    Raises
    ------
    FileNotFoundError
    ValueError
        Malformed or inconsistent content (unknown variable or state, missing table row, wrong
        number of probabilities, rows not summing to 1, a directed cycle).
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"`path` must be a str or path-like; got {type(path).__name__}")
    with open(path, encoding="utf-8") as fh:
        return parse_bif(fh.read(), where=str(path))


def parse_bif(text: str, *, where: str = "<BIF text>") -> DiscreteBN:
    """A discrete Bayesian network from the text of a BIF file (the reading of :func:`read_bif`);
    ``where`` names the source in error messages."""
    path = where
    text = _COMMENT.sub(" ", text)
    blocks = _blocks(text, path)
    names, states = [], []
    for _, name, body in (b for b in blocks if b[0] == "variable"):
        m = _TYPE.search(body)
        if m is None:
            raise ValueError(
                f"{path}: variable {name!r} is not of the form 'type discrete [ k ] {{ states }}'"
            )
        st = _tokens(m.group(2))
        if len(st) != int(m.group(1)):
            raise ValueError(
                f"{path}: variable {name!r} declares {m.group(1)} states but lists {len(st)}: {st}"
            )
        names.append(name.strip('"'))
        states.append(tuple(st))
    if not names:
        raise ValueError(f"{path}: no 'variable' block found; is this a BIF file?")
    index = {n: k for k, n in enumerate(names)}
    parents: list = [None] * len(names)
    cpts: list = [None] * len(names)
    for _, header, body in (b for b in blocks if b[0] == "probability"):
        m = _PARENTS.match(header)
        if m is None:
            raise ValueError(f"{path}: cannot read the probability header {header!r}")
        child, pa_text = m.groups()
        where = f"{path}: probability {header}"
        child = child.strip().strip('"')
        pa = _tokens(pa_text or "")
        unknown = [v for v in [child, *pa] if v not in index]
        if unknown:
            raise ValueError(f"{where}: unknown variable(s) {unknown}")
        j, pidx = index[child], [index[p] for p in pa]
        if cpts[j] is not None:
            raise ValueError(f"{where}: a second probability block for {child!r}")
        r = len(states[j])
        pshape = tuple(len(states[p]) for p in pidx)
        table = np.full(pshape + (r,), np.nan)
        for kind, values in _TABLE.findall(_ROW.sub(" ", body)):
            vals = _floats(values, where)
            if kind == "default":
                if vals.size != r:
                    raise ValueError(f"{where}: default has {vals.size} values; expected {r}")
                table[np.isnan(table[..., 0])] = vals
            else:
                if vals.size != table.size:
                    raise ValueError(f"{where}: table has {vals.size} values; expected {table.size}")
                table = np.moveaxis(vals.reshape((r,) + pshape), 0, -1).copy()
        for cfg, values in _ROW.findall(body):
            labels = _tokens(cfg)
            if len(labels) != len(pidx):
                raise ValueError(
                    f"{where}: row ({cfg}) names {len(labels)} parent states; expected {len(pidx)}"
                )
            try:
                pos = tuple(states[p].index(s) for p, s in zip(pidx, labels))
            except ValueError:
                raise ValueError(f"{where}: row ({cfg}) names an unknown parent state") from None
            vals = _floats(values, where)
            if vals.size != r:
                raise ValueError(f"{where}: row ({cfg}) has {vals.size} values; expected {r}")
            table[pos] = vals
        if np.isnan(table).any():
            raise ValueError(
                f"{where}: {int(np.isnan(table[..., 0]).sum())} parent configuration(s) have no probabilities"
            )
        order = np.argsort(pidx)  # DiscreteBN keeps parents ascending
        parents[j] = tuple(pidx[k] for k in order)
        cpts[j] = np.moveaxis(table, list(order), list(range(len(pidx))))
    missing = [names[k] for k in range(len(names)) if cpts[k] is None]
    if missing:
        raise ValueError(f"{path}: no probability block for {missing}")
    return DiscreteBN(names=tuple(names), states=tuple(states), parents=tuple(parents), cpts=tuple(cpts))
