"""PC on one differentially private covariance: the simplest private constraint-based learner for
Gaussian data, and a second learner over the joint release of secure aggregation.

The participants release their covariance once — each its own Gaussian release (local DP, as
DP-Fed-BNSL does) or one jointly noised integer release under secure aggregation
(:mod:`dpbnsl.learners.covariance_release`) — and the server runs PC with Fisher's z tests
made noise-aware (:class:`~dpbnsl.learners.constraint.noisy_fisher_z.NoisyFisherZ`): the release's
public noise level enters every test's variance, and an indefinite release is repaired once. The
tests, the orientation and the extension are post-processing: the whole run spends the release's
(ε, δ) and nothing more, however many tests PC runs.
"""

from __future__ import annotations

import functools
from typing import Any, Literal

import numpy as np

from ..._validation import ArrayLike, as_participants, check_choice, check_int
from ...blas import one_blas_thread
from ..covariance_release import AGGREGATIONS
from ..release_fit import release_and_fit
from ..result import LearnResult
from .noisy_fisher_z import NoisyFisherZ
from .pc import check_pc_options, run_pc

__all__ = ["pc_from_covariance", "dp_cov_pc"]


def pc_from_covariance(
    S: ArrayLike,
    n: int,
    *,
    noise_sd: float = 0.0,
    alpha: float = 0.01,
    variant: str = "stable",
    max_cond_size: int | None = None,
    sepset: str = "skeleton",
    max_sepset_size: int | None = 3,
    conflict: str = "first",
    extension: str = "dor-tarsi",
    floor: float | None = None,
    columns: tuple[str, ...] | None = None,
) -> LearnResult:
    """PC with noise-aware Fisher-z tests on a (released) covariance ``S`` of ``n`` rows.

    Parameters
    ----------
    S : array of shape (d, d)
        Symmetric; a noisy release may be indefinite (it is repaired once, see
        :class:`~dpbnsl.learners.constraint.noisy_fisher_z.NoisyFisherZ`).
    n : int >= 2
        The rows behind ``S``.
    noise_sd : float >= 0, default 0
        The public standard deviation of each released entry; 0 is Fisher's z test.
    alpha, variant, max_cond_size, sepset, max_sepset_size, conflict, extension
        As in :func:`~dpbnsl.learners.constraint.pc.pc`.
    floor : float > 0, optional
        The eigenvalue floor of the repair (default 2·noise_sd·√d).

    Returns
    -------
    LearnResult
        As :func:`~dpbnsl.learners.constraint.pc.pc`'s, with ``info["repaired"]`` (whether the
        release needed the repair) and ``info["floor"]``.

    Examples
    --------
    >>> import numpy as np
    >>> from dpbnsl.simulation import simulate
    >>> data = simulate(5, 2000, participants=1, rng=0)
    >>> r = pc_from_covariance(np.cov(data.X, rowvar=False), 2000)
    >>> r.is_dag, r.params["test"]
    (True, 'noisy-fisher-z')
    """
    opts = check_pc_options(
        alpha=alpha, variant=variant, max_cond_size=max_cond_size, conflict=conflict, extension=extension
    )
    check_choice(sepset, "sepset", ("skeleton", "max-p"))
    if max_sepset_size is not None:
        max_sepset_size = check_int(max_sepset_size, "max_sepset_size", low=0)
    ci = NoisyFisherZ(S, n, noise_sd=noise_sd, floor=floor)
    dag, cpdag, history, info = run_pc(ci, opts, sepset=sepset, max_sepset_size=max_sepset_size)
    info.update(repaired=ci.repaired, floor=ci.floor)
    params = dict(opts, test=ci.name, sepset=sepset, max_sepset_size=max_sepset_size, noise_sd=ci.noise_sd)
    params.pop("no_sepset")
    return LearnResult("pc", dag, cpdag, history, columns, params=params, info=info)


#: PC's options and their defaults (those of :func:`dp_cov_pc`)
PC_DEFAULTS: dict[str, Any] = dict(
    alpha=0.01, variant="stable", max_cond_size=None, conflict="first", extension="dor-tarsi"
)


def hosted_pc_fit(settings: dict[str, Any]) -> Any:
    """The hosted server's fit: PC with noise-aware tests on the release, as (W, W_raw, history),
    with the PC options of ``settings`` (others are ignored; defaults of :func:`dp_cov_pc`)."""
    opts = check_pc_options(**{k: settings.get(k, v) for k, v in PC_DEFAULTS.items()})
    keep = ("alpha", "variant", "max_cond_size", "conflict", "extension")

    def fit(release: Any) -> tuple[np.ndarray, np.ndarray, Any]:
        r = pc_from_covariance(release.S, release.n, noise_sd=release.noise_sd, **{k: opts[k] for k in keep})
        return r.W, r.W_raw, r.history

    return fit


@one_blas_thread
def dp_cov_pc(
    participants: Any,
    *,
    epsilon: float,
    delta: float,
    clip_norm: float,
    aggregation: Literal["local", "secure"] = "local",
    dropouts: int = 0,
    noise: str = "skellam",
    modulus_bits: int = 31,
    calibration: Literal["tight", "classic", "zcdp"] = "tight",
    rng: np.random.Generator | int | None = None,
    alpha: float = 0.01,
    variant: str = "stable",
    max_cond_size: int | None = None,
    conflict: str = "first",
    extension: str = "dor-tarsi",
) -> LearnResult:
    """PC on one private covariance of the participants' pooled rows (module docstring).

    Parameters
    ----------
    participants : sequence of arrays or DataFrames of shape (n_k, d)
        Declared centred (nothing is subtracted).
    epsilon : float in [1e-6, 100], delta : float in (0, 1)
        Every record's guarantee (replace-one within a participant's dataset).
    clip_norm : float > 0
        R, a **public** bound on each row's norm (rows are clipped to it).
    aggregation : {"local", "secure"}, default "local"
        "local": each participant releases its own covariance with Gaussian noise (the server
        averages them: local DP, no trust needed); "secure": one jointly noised integer release
        under secure aggregation (about √P less noise; trust as
        :func:`~dpbnsl.learners.linear.dp_fed_bnsl_secure.dp_fed_bnsl_secure` states).
    dropouts, noise, modulus_bits
        The secure release's t, noise ("skellam" or "ddg") and modular range (secure only).
    calibration : {"tight", "classic", "zcdp"}, default "tight"
        The local release's Gaussian calibration (local only).
    rng : None, int or numpy Generator
        The noise source; participant k draws from stream k of ``rng.spawn(P)``. **A fixed seed
        voids the guarantee.**
    alpha, variant, max_cond_size, conflict, extension
        PC's (:func:`~dpbnsl.learners.constraint.pc.pc`); α is the tests' significance level.

    Returns
    -------
    LearnResult
        ``method`` "dp-cov-pc"; ``W`` a DAG of the learned CPDAG (``W_raw``, ``info["cpdag"]``);
        ``ledger`` one per participant; ``info``: ``noise_sd`` (per released entry of the pooled
        covariance), ``repaired``, ``ci_tests``, and with secure aggregation ``plan`` and
        ``release``.

    Privacy
    -------
    One covariance release per run: local, the Gaussian mechanism on XᵀX/n_k of rows clipped to R
    (ℓ2 sensitivity √2·R²/n_k) per participant; secure, the distributed integer mechanism of
    :mod:`dpbnsl.learners.linear.secure_covariance`. The tests, the repair and the orientation use
    the release and public numbers only (post-processing).

    Examples
    --------
    >>> from dpbnsl.simulation import simulate
    >>> data = simulate(6, 2000, participants=4, rng=0)
    >>> r = dp_cov_pc(data.participants, epsilon=2.0, delta=1e-5, clip_norm=10.0, aggregation="secure")
    >>> r.method, r.privacy.epsilon <= 2.0, r.is_dag
    ('dp-cov-pc', True, True)
    """
    check_choice(aggregation, "aggregation", AGGREGATIONS)
    opts = check_pc_options(
        alpha=alpha, variant=variant, max_cond_size=max_cond_size, conflict=conflict, extension=extension
    )
    arrays, columns = as_participants(participants, min_rows=1)
    n_k = tuple(X.shape[0] for X in arrays)
    if sum(n_k) < 2:  # before any release: PC's tests need two rows
        raise ValueError(f"`participants` hold {sum(n_k)} row(s) in all; PC needs at least 2")
    fit = functools.partial(
        pc_from_covariance,
        alpha=opts["alpha"],
        variant=opts["variant"],
        max_cond_size=opts["max_cond_size"],
        conflict=opts["conflict"],
        extension=opts["extension"],
        columns=columns,
    )
    pc_params = dict(opts, test=NoisyFisherZ.name)
    pc_params.pop("no_sepset")
    run = release_and_fit(
        arrays,
        columns,
        lambda S, n, noise_sd: fit(S, n, noise_sd=noise_sd),
        epsilon=epsilon,
        delta=delta,
        clip_norm=clip_norm,
        aggregation=aggregation,
        dropouts=dropouts,
        noise=noise,
        modulus_bits=modulus_bits,
        calibration=calibration,
        rng=rng,
    )
    return run.result("dp-cov-pc", columns, pc_params, run.fit.info, n_k)
