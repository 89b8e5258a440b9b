"""The learner registry: one entry per structure learner, read by the command line, the sweeps,
the attacks and the contract tests.

An entry says what the learner is (``family``, ``private``, whether it pools the rows or needs
the true graph), what its messages let an attacker read (``messages``), and how the tools run it:
``defaults`` (settings every tool passes unless told otherwise), ``simulation`` (public settings
for simulated data, e.g. a feature bound at the simulator's scale), ``quick`` (settings for a
seconds-long run on small data: tests and examples), ``cli_options`` (the ``dpbnsl learn``
options it reads; any other non-default option is refused) and ``cli_kwargs`` (those options as
keyword arguments). Private learners also give ``plan``, their
pre-data validation and calibration, so that a sweep refuses a bad setting before any run.

Adding a learner is one :class:`Learner` in :data:`LEARNERS` (plus its own module)::

    "my-learner": Learner(
        "my-learner", my_learner, family="linear", private=False,
        cli_options=("lambda1", "threshold"), cli_kwargs=_linear_kwargs,
        quick={"max_iter": 5}),

after which ``dpbnsl learn --method my-learner``, ``sweep(methods=["my-learner"], …)`` and the
contract tests (``tests/contract/test_learners.py``) run it.
"""

from __future__ import annotations

import argparse
import importlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, cast

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from .._validation import ArrayLike
    from .linear.sparse_plan import SparsePlan
    from .result import LearnResult

__all__ = ["Learner", "LEARNERS", "learner", "names"]

Family = Literal["linear", "nonlinear", "temporal", "constraint"]
KwargsFromArgs = Callable[[argparse.Namespace], dict]


def _frozen(mapping: Mapping | None) -> Mapping:
    return MappingProxyType(dict(mapping or {}))


@dataclass(frozen=True)
class Learner:
    """One structure learner as the package's tools see it (see the module docstring).

    ``target`` is the learner (or ``"module:attr"``, imported on first use: :attr:`function`);
    ``function(data, **kwargs)`` returns a :class:`~dpbnsl.learners.LearnResult`; ``data`` is the
    list of participants, or their stacked rows when ``pooled`` (a centralised reference; a
    time-series learner pools the participants' series without stacking them). ``oracle``
    learners also take ``B_true`` (the true graph). ``defaults`` are passed by every tool;
    ``simulation`` only on simulated data (public bounds at the simulator's scale, a value or a
    function of d: :meth:`simulation_settings`; sweeps, attacks on simulated data, the demo and
    tests), never on a user's data, where such settings are the user's. ``dag``: the output is promised
    acyclic. ``messages``: ``"dense"`` (Fed-BNSL's consensus-ADMM messages, which reveal each
    participant's covariance), ``"sparse"`` (Fed-Sparse-BNSL's sparse messages) or None (not
    attackable by :mod:`dpbnsl.attacks`).
    """

    name: str
    target: Callable[..., Any] | str
    family: Family
    private: bool = False
    pooled: bool = False
    oracle: bool = False
    dag: bool = True
    messages: Literal["dense", "sparse"] | None = None
    #: it runs as a hosted protocol too (:data:`dpbnsl.learners.hosted.HOSTED`: in process, on Flower)
    hosted: bool = False
    defaults: Mapping[str, Any] = field(default_factory=dict)
    simulation: Mapping[str, Any] = field(default_factory=dict)
    quick: Mapping[str, Any] = field(default_factory=dict)
    cli_options: tuple[str, ...] = ()
    cli_kwargs: KwargsFromArgs = field(default=lambda args: {})
    plan: Callable[..., Any] | None = None

    def __post_init__(self) -> None:
        for name in ("defaults", "simulation", "quick"):
            object.__setattr__(self, name, _frozen(getattr(self, name)))

    @property
    def function(self) -> Callable[..., Any]:
        """The learner itself: ``target``, or the object it names (``"module:attr"``, a module of
        :mod:`dpbnsl.learners`), imported on first use so that reading the registry (the command
        line's options, a sweep's plan) loads no learner."""
        if not isinstance(self.target, str):
            return self.target
        module, _, attr = self.target.partition(":")
        return cast(Callable[..., Any], getattr(importlib.import_module(f".{module}", __package__), attr))

    def simulation_settings(self, d: int) -> dict[str, Any]:
        """The ``simulation`` settings for data of the package's simulator with d variables (a
        function of d evaluated; see :func:`dpbnsl.simulation.simulated_bounds`)."""
        return {k: (v(d) if callable(v) else v) for k, v in self.simulation.items()}

    @property
    def stacked(self) -> bool:
        """Whether :meth:`run` stacks the participants' rows into one array."""
        return self.pooled and self.family != "temporal"

    def run(self, participants: Any, *, B_true: ArrayLike | None = None, **kwargs: Any) -> LearnResult:
        """Run on a list of participants' arrays or DataFrames (stacked first when
        :attr:`stacked`), with ``defaults`` updated by ``kwargs``; ``B_true`` is required by
        oracles, refused by the others."""
        if self.oracle and B_true is None:
            raise ValueError(f"{self.name} is an oracle: it needs `B_true` (the true graph)")
        if B_true is not None and not self.oracle:
            raise TypeError(f"{self.name} is not an oracle: it does not take `B_true`")
        data = _stack(participants) if self.stacked else list(participants)
        extra = {"B_true": B_true} if self.oracle else {}
        return self.function(data, **{**self.defaults, **kwargs}, **extra)


def _stack(participants: Any) -> np.ndarray | pd.DataFrame:
    """The participants' rows stacked (DataFrames keep their columns)."""
    import numpy as np
    import pandas as pd

    parts = list(participants)
    if parts and all(isinstance(p, pd.DataFrame) for p in parts):
        return pd.concat(parts, ignore_index=True)
    return np.vstack([np.asarray(p, dtype=float) for p in parts])


# --- `dpbnsl learn` options as keyword arguments (None = the learner's own default) ------------


def _given(args: argparse.Namespace, *names: str, rename: Mapping[str, str] | None = None) -> dict:
    rename = rename or {}
    return {rename.get(n, n): getattr(args, n) for n in names if getattr(args, n) is not None}


_LINEAR = ("lambda1", "threshold")


def _linear_kwargs(args: argparse.Namespace) -> dict:
    return _given(args, *_LINEAR)


#: NOTEARS and its local-fit baselines also read the cap on its dual updates
_NOTEARS = _LINEAR + ("max_iter",)


def _notears_kwargs(args: argparse.Namespace) -> dict:
    return _given(args, *_NOTEARS)


def _fed_bnsl_kwargs(args: argparse.Namespace) -> dict:
    return _given(args, *_LINEAR, "max_rounds")


def _sparse_kwargs(args: argparse.Namespace) -> dict:
    return _given(args, *_LINEAR, "rounds", "local_iters")


_PRIVATE = ("epsilon", "delta", "centre", "seed")
_DP_SPARSE = (
    "clip",
    "clip_scheme",
    "calibration",
    "smoothness",
    "feature_bound",
    "warm_start",
    "warm_share",
    "warm_clip_norm",
    "aggregation",
    "dropouts",
)


def _dp_sparse_kwargs(args: argparse.Namespace) -> dict:
    return _given(args, *_LINEAR, "rounds", "local_iters", *_PRIVATE, *_DP_SPARSE, rename={"seed": "rng"})


def _dp_covariance_kwargs(args: argparse.Namespace) -> dict:
    return _given(
        args,
        *_LINEAR,
        "max_rounds",
        *_PRIVATE,
        "clip_norm",
        "calibration",
        "aggregation",
        "dropouts",
        rename={"seed": "rng"},
    )


_CI = ("alpha", "ci_test")


def _ci_kwargs(args: argparse.Namespace) -> dict:
    return _given(args, *_CI, rename={"ci_test": "test"})


_DP_COV_PC = ("alpha", "epsilon", "delta", "seed", "clip_norm", "calibration", "aggregation", "dropouts")


def _dp_cov_pc_kwargs(args: argparse.Namespace) -> dict:
    return _given(args, *_DP_COV_PC, rename={"seed": "rng"})


def _plan_dp_cov_pc(d: int, n_k: int | Sequence[int], **options: Any) -> Any:
    """The covariance release's plan: local (Gaussian, one per participant) or joint (secure)."""
    if options.get("aggregation", "local") == "secure":
        return _plan_covariance_learner(d, n_k, **options)
    from .covariance_plan import plan

    keep = ("epsilon", "delta", "clip_norm", "calibration")
    return plan(psd=False, **{k: options[k] for k in keep if k in options})


_PRIV_PC = ("alpha", "epsilon", "delta", "seed", "variables", "bounds", "bins", "max_examinations")


def _priv_pc_kwargs(args: argparse.Namespace) -> dict:
    out = _given(args, *_PRIV_PC[1:], rename={"seed": "rng", "variables": "data"})
    if "alpha" in getattr(args, "given", ()):  # --alpha's default is the other tests' 0.01
        out["alpha"] = args.alpha
    return out


def _plan_priv_pc(d: int, n_k: int | Sequence[int], **options: Any) -> Any:
    """Priv-PC's calibration on the pooled rows (every reserved round)."""
    from .constraint.priv_pc import default_rounds, plan_priv_pc

    n = n_k if isinstance(n_k, int) else sum(n_k)
    keep = {k: options[k] for k in ("sieve_share", "subsample", "accountant") if k in options}
    rounds = options.get("max_examinations") or default_rounds(d)
    return plan_priv_pc(epsilon=options["epsilon"], delta=options["delta"], n=n, rounds=rounds, **keep)


_DP_FED_PC = (*_PRIV_PC, "aggregation", "dropouts")


def _dp_fed_pc_kwargs(args: argparse.Namespace) -> dict:
    return {**_priv_pc_kwargs(args), **_given(args, "aggregation", "dropouts")}


def _plan_dp_fed_pc(d: int, n_k: int | Sequence[int], **options: Any) -> Any:
    """DP-FedPC's calibration: Priv-PC's on every participant's rows, or with
    ``aggregation="secure"`` the jointly noised tests' plan."""
    sizes = (n_k,) if isinstance(n_k, int) else tuple(n_k)
    if options.get("aggregation", "local") == "secure":
        from .constraint.secure_kendall import default_tests, plan_secure_tests

        return plan_secure_tests(
            epsilon=options["epsilon"],
            delta=options["delta"],
            participants=len(sizes),
            n_total=sum(sizes),
            d=d,
            tests=options.get("max_examinations") or default_tests(d),
            dropouts=options.get("dropouts", 0),
            modulus_bits=options.get("modulus_bits", 31),
        )
    keep = {k: v for k, v in options.items() if k not in ("aggregation", "dropouts", "modulus_bits")}
    return [_plan_priv_pc(d, n, **keep) for n in sizes]


def _simulated_range(d: int) -> tuple[float, float]:
    """(−B, B) with B² the simulator's public bound on x_ia² (Priv-PC's bins on simulated data)."""
    b = math.sqrt(_simulated("feature_bound")(d))
    return (-b, b)


_DP_SORT = ("threshold", "epsilon", "delta", "seed", "clip_norm", "calibration", "aggregation", "dropouts")
_SORT_DEFAULTS = {"threshold": 0.3}


def _threshold_kwargs(args: argparse.Namespace) -> dict:
    return _given(args, "threshold")


def _dp_sort_kwargs(args: argparse.Namespace) -> dict:
    return _given(args, *_DP_SORT, rename={"seed": "rng"})


_MLP = ("lambda1", "threshold", "seed", "ftol")


def _mlp_kwargs(args: argparse.Namespace) -> dict:
    out = _given(args, "lambda1", "threshold", "seed", rename={"seed": "rng"})
    if getattr(args, "ftol", None) is not None:
        out["solver_options"] = {"ftol": args.ftol}
    return out


def _mlp_rounds_kwargs(args: argparse.Namespace) -> dict:
    return {**_mlp_kwargs(args), **_given(args, "max_rounds")}


_DBN = ("lag", "lambda_w", "lambda_a", "threshold")


def _dbn_kwargs(args: argparse.Namespace) -> dict:
    out = _given(args, "lag", "lambda_w", "lambda_a")
    if getattr(args, "threshold", None) is not None:
        out.update(threshold_w=args.threshold, threshold_a=args.threshold)
    return out


def _dbn_rounds_kwargs(args: argparse.Namespace) -> dict:
    return {**_dbn_kwargs(args), **_given(args, "max_rounds")}


_FCD = ("lambda1", "seed", "it_in", "it_fl", "participants_per_round")


def _fcd_kwargs(args: argparse.Namespace) -> dict:  # unset: the paper's Table 6/7 value for this d
    return _given(args, *_FCD, rename={"seed": "rng"})


def _plan_sparse_learner(d: int, n_k: int | Sequence[int], **options: Any) -> SparsePlan:
    from .linear.sparse_plan import plan

    return plan(d, n_k=n_k, **options)


def _plan_covariance_learner(d: int, n_k: int | Sequence[int], **options: Any) -> Any:
    """The local release's plan (independent of d and n_k), or with ``aggregation="secure"`` the
    joint release's (:class:`~dpbnsl.accounting.distributed.DistributedPlan`)."""
    if options.get("aggregation", "local") == "secure":
        from .covariance_release import release_settings, secure_plan

        sizes = [int(n_k)] if isinstance(n_k, int) else [int(n) for n in n_k]
        keep = ("epsilon", "delta", "clip_norm", "noise", "dropouts", "modulus_bits")
        chosen = {k: options[k] for k in keep if k in options}
        settings = release_settings(participants=len(sizes), n_total=sum(sizes), **chosen)
        return secure_plan(settings, d=d)
    from .covariance_plan import plan

    options = {
        k: v for k, v in options.items() if k not in ("aggregation", "dropouts", "noise", "modulus_bits")
    }
    if options.get("lambda1", 0.01) is None:
        options["lambda1"] = 0.01
    return plan(**options)


def _simulated(name: str) -> Callable[[int], float]:
    """The public bound ``name`` at the simulator's scale, as a function of d."""

    def bound(d: int) -> float:
        from ..simulation.linear import simulated_bounds

        return simulated_bounds(d)[name]

    return bound


# --- the registry ---------------------------------------------------------------------------------

#: ℓ1 weight of the local NOTEARS fits of the baselines (the Fed-BNSL authors' default).
_BASELINE_LAMBDA = {"lambda1": 0.01}
_MLP_QUICK = {"max_iter": 3, "solver_options": {"ftol": 1e-6}, "rng": 0}
_DBN_QUICK = {"lag": 1, "max_iter": 5}
_FCD_QUICK = {"it_in": 40, "it_fl": 20, "it_max": 2, "rho_max": 1.0, "hidden": 4, "layers": 2, "rng": 0}

_ENTRIES = (
    # linear, score-based
    Learner(
        "notears",
        "linear.notears:notears",
        "linear",
        pooled=True,
        cli_options=_NOTEARS,
        cli_kwargs=_notears_kwargs,
    ),
    Learner(
        "fed-bnsl",
        "linear.fed_bnsl:fed_bnsl",
        "linear",
        hosted=True,
        messages="dense",
        cli_options=_LINEAR + ("max_rounds",),
        cli_kwargs=_fed_bnsl_kwargs,
    ),
    Learner(
        "notears-voting",
        "combiners:notears_voting",
        "linear",
        dag=False,
        defaults=_BASELINE_LAMBDA,
        cli_options=_NOTEARS,
        cli_kwargs=_notears_kwargs,
    ),
    Learner(
        "notears-average",
        "combiners:notears_average",
        "linear",
        defaults=_BASELINE_LAMBDA,
        cli_options=_NOTEARS,
        cli_kwargs=_notears_kwargs,
    ),
    Learner(
        "notears-best",
        "combiners:notears_best",
        "linear",
        oracle=True,
        defaults=_BASELINE_LAMBDA,
        cli_options=_NOTEARS,
        cli_kwargs=_notears_kwargs,
    ),
    Learner(
        "fed-sparse-bnsl",
        "linear.fed_sparse_bnsl:fed_sparse_bnsl",
        "linear",
        hosted=True,
        messages="sparse",
        quick={"rounds": 20},
        cli_options=_LINEAR + ("rounds", "local_iters"),
        cli_kwargs=_sparse_kwargs,
    ),
    Learner(
        "dp-fed-sparse-bnsl",
        "linear.dp_fed_sparse_bnsl:dp_fed_sparse_bnsl",
        "linear",
        hosted=True,
        private=True,
        messages="sparse",
        simulation={"feature_bound": _simulated("feature_bound")},
        quick={"epsilon": 5.0, "delta": 1e-5, "rounds": 5, "feature_bound": 50.0},
        cli_options=_LINEAR + ("rounds", "local_iters") + _PRIVATE + _DP_SPARSE,
        cli_kwargs=_dp_sparse_kwargs,
        plan=_plan_sparse_learner,
    ),
    Learner(
        "dp-fed-bnsl",
        "linear.dp_fed_bnsl:dp_fed_bnsl",
        "linear",
        hosted=True,
        private=True,
        messages="dense",
        simulation={"clip_norm": _simulated("clip_norm")},
        quick={"epsilon": 5.0, "delta": 1e-5, "clip_norm": 5.0},
        cli_options=_LINEAR
        + ("max_rounds",)
        + _PRIVATE
        + ("clip_norm", "calibration", "aggregation", "dropouts"),
        cli_kwargs=_dp_covariance_kwargs,
        plan=_plan_covariance_learner,
    ),
    # the sorting baselines (Reisach et al.): not private on pooled rows, private on one release;
    # thresholded at 0.3 by the tools like every linear learner (the functions' own default is 0)
    Learner(
        "sortnregress",
        "linear.sortnregress:sortnregress",
        "linear",
        pooled=True,
        defaults=_SORT_DEFAULTS,
        cli_options=("threshold",),
        cli_kwargs=_threshold_kwargs,
    ),
    Learner(
        "r2-sortnregress",
        "linear.sortnregress:sortnregress",
        "linear",
        pooled=True,
        defaults={**_SORT_DEFAULTS, "criterion": "r2"},
        cli_options=("threshold",),
        cli_kwargs=_threshold_kwargs,
    ),
    Learner(
        "dp-sortnregress",
        "linear.dp_sortnregress:dp_sortnregress",
        "linear",
        private=True,
        defaults=_SORT_DEFAULTS,
        simulation={"clip_norm": _simulated("clip_norm")},
        quick={"epsilon": 5.0, "delta": 1e-5, "clip_norm": 5.0},
        cli_options=_DP_SORT,
        cli_kwargs=_dp_sort_kwargs,
        plan=_plan_dp_cov_pc,
    ),
    Learner(
        "dp-r2-sortnregress",
        "linear.dp_sortnregress:dp_sortnregress",
        "linear",
        private=True,
        defaults={**_SORT_DEFAULTS, "criterion": "r2"},
        simulation={"clip_norm": _simulated("clip_norm")},
        quick={"epsilon": 5.0, "delta": 1e-5, "clip_norm": 5.0},
        cli_options=_DP_SORT,
        cli_kwargs=_dp_sort_kwargs,
        plan=_plan_dp_cov_pc,
    ),
    # constraint-based
    Learner("pc", "constraint.pc:pc", "constraint", pooled=True, cli_options=_CI, cli_kwargs=_ci_kwargs),
    Learner(
        "fed-pc",
        "constraint.fed_pc:fed_pc",
        "constraint",
        hosted=True,
        cli_options=_CI,
        cli_kwargs=_ci_kwargs,
    ),
    Learner(
        "dp-cov-pc",
        "constraint.dp_cov_pc:dp_cov_pc",
        "constraint",
        private=True,
        hosted=True,  # with aggregation="secure" (its local release runs in process)
        simulation={"clip_norm": _simulated("clip_norm")},
        quick={"epsilon": 5.0, "delta": 1e-5, "clip_norm": 5.0},
        cli_options=_DP_COV_PC,
        cli_kwargs=_dp_cov_pc_kwargs,
        plan=_plan_dp_cov_pc,
    ),
    Learner(
        "priv-pc",
        "constraint.priv_pc:priv_pc",
        "constraint",
        private=True,
        pooled=True,
        simulation={"data": "continuous", "bounds": _simulated_range},
        quick={"epsilon": 5.0, "delta": 1e-5},
        cli_options=_PRIV_PC,
        cli_kwargs=_priv_pc_kwargs,
        plan=_plan_priv_pc,
    ),
    Learner(
        "dp-fed-pc",
        "constraint.dp_fed_pc:dp_fed_pc",
        "constraint",
        private=True,
        hosted=True,  # with aggregation="secure" (its local vote runs in process)
        simulation={"data": "continuous", "bounds": _simulated_range},
        quick={"epsilon": 5.0, "delta": 1e-5},
        cli_options=_DP_FED_PC,
        cli_kwargs=_dp_fed_pc_kwargs,
        plan=_plan_dp_fed_pc,
    ),
    Learner("pc-all", "constraint.fed_pc:pc_all", "constraint", cli_options=_CI, cli_kwargs=_ci_kwargs),
    Learner(
        "pc-best",
        "constraint.fed_pc:pc_best",
        "constraint",
        oracle=True,
        cli_options=_CI,
        cli_kwargs=_ci_kwargs,
    ),
    Learner(
        "fed-pc-simple-i",
        "constraint.fed_pc:fed_pc_simple_i",
        "constraint",
        cli_options=_CI,
        cli_kwargs=_ci_kwargs,
    ),
    Learner(
        "fed-pc-simple-ii",
        "constraint.fed_pc:fed_pc_simple_ii",
        "constraint",
        cli_options=_CI,
        cli_kwargs=_ci_kwargs,
    ),
    # nonlinear
    Learner(
        "notears-mlp",
        "nonlinear.notears_mlp:notears_mlp",
        "nonlinear",
        pooled=True,
        quick=_MLP_QUICK,
        cli_options=_MLP,
        cli_kwargs=_mlp_kwargs,
    ),
    Learner(
        "fed-bnsl-mlp",
        "nonlinear.fed_bnsl_mlp:fed_bnsl_mlp",
        "nonlinear",
        hosted=True,
        quick={"max_rounds": 5, "solver_options": {"ftol": 1e-6}, "rng": 0},
        cli_options=_MLP + ("max_rounds",),
        cli_kwargs=_mlp_rounds_kwargs,
    ),
    Learner(
        "notears-mlp-voting",
        "nonlinear.notears_mlp:notears_mlp_voting",
        "nonlinear",
        dag=False,
        quick=_MLP_QUICK,
        cli_options=_MLP,
        cli_kwargs=_mlp_kwargs,
    ),
    Learner(
        "notears-mlp-best",
        "nonlinear.notears_mlp:notears_mlp_best",
        "nonlinear",
        oracle=True,
        quick=_MLP_QUICK,
        cli_options=_MLP,
        cli_kwargs=_mlp_kwargs,
    ),
    Learner(
        "ds-fcd",
        "nonlinear.ds_fcd:ds_fcd",
        "nonlinear",
        hosted=True,
        quick=_FCD_QUICK,
        cli_options=_FCD,
        cli_kwargs=_fcd_kwargs,
    ),
    Learner(
        "as-fcd",
        "nonlinear.ds_fcd:as_fcd",
        "nonlinear",
        hosted=True,
        quick=_FCD_QUICK,
        cli_options=_FCD,
        cli_kwargs=_fcd_kwargs,
    ),
    # time series (each participant's rows are one series, in time order)
    Learner(
        "dynotears",
        "temporal.dynotears:dynotears",
        "temporal",
        pooled=True,
        quick=_DBN_QUICK,
        cli_options=_DBN,
        cli_kwargs=_dbn_kwargs,
    ),
    Learner(
        "fed-dbn",
        "temporal.fed_dbn:fed_dbn",
        "temporal",
        hosted=True,
        quick={"lag": 1, "max_rounds": 30},
        cli_options=_DBN + ("max_rounds",),
        cli_kwargs=_dbn_rounds_kwargs,
    ),
    Learner(
        "dynotears-average",
        "temporal.dynotears_baselines:dynotears_average",
        "temporal",
        quick={**_DBN_QUICK, "acyclic": True},
        cli_options=_DBN,
        cli_kwargs=_dbn_kwargs,
    ),
    Learner(
        "dynotears-best",
        "temporal.dynotears_baselines:dynotears_best",
        "temporal",
        oracle=True,
        quick=_DBN_QUICK,
        cli_options=_DBN,
        cli_kwargs=_dbn_kwargs,
    ),
    Learner(
        "dynotears-all",
        "temporal.dynotears_baselines:dynotears_all",
        "temporal",
        quick=_DBN_QUICK,
        cli_options=_DBN,
        cli_kwargs=_dbn_kwargs,
    ),
)

#: Every learner by name, in the order the command line lists them.
LEARNERS: Mapping[str, Learner] = MappingProxyType({x.name: x for x in _ENTRIES})


def learner(name: str) -> Learner:
    """The registry entry called ``name`` (a clear error naming the choices otherwise)."""
    if not isinstance(name, str) or name not in LEARNERS:
        raise ValueError(f"unknown learner {name!r}; choose one of {', '.join(LEARNERS)}")
    return LEARNERS[name]


def names(
    *,
    family: str | None = None,
    private: bool | None = None,
    messages: str | None = None,
    hosted: bool | None = None,
    oracle: bool | None = None,
) -> tuple[str, ...]:
    """The names of the learners matching every given criterion, in registry order."""
    return tuple(
        x.name
        for x in _ENTRIES
        if (family is None or x.family == family)
        and (private is None or x.private == private)
        and (messages is None or x.messages == messages)
        and (hosted is None or x.hosted == hosted)
        and (oracle is None or x.oracle == oracle)
    )
