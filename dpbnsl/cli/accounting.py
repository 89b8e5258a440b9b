"""The ``noise`` and ``account`` commands of the CLI: thin shells over :mod:`dpbnsl.accounting`.

Registered by :func:`dpbnsl.cli.build_parser`; errors reach :func:`dpbnsl.cli.main`, which prints
them as one line and exits with status 2.

The parsers need nothing beyond the standard library; the accounting (numpy, scipy, pandas and
dp-accounting, most of these commands' run time) is imported by the handlers, so ``dpbnsl noise
--help`` and argument errors stay instant.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Literal, cast

from .common import COMMANDS, MAX_COUNT, CLIError, add_json_option, count, set_json
from .common import table as _table

__all__ = ["add_noise_command", "add_account_command", "run_noise"]

_NOISE_COLUMNS = ("method", "gumbel_multiplier", "gaussian_multiplier", "rho_per_step", "eps_zcdp", "eps_rdp")


def add_noise_command(
    sub: argparse._SubParsersAction, formatter: Callable[..., argparse.HelpFormatter]
) -> None:
    """Add ``noise`` to the sub-parsers ``sub``."""
    noise = sub.add_parser(
        "noise",
        formatter_class=formatter,
        help=COMMANDS["noise"],
        description="Calibrate the noise of a private learner to a target (ε, δ), before any "
        "data. Default (--method dp-pgcd): T·K DP-PGCD iterations (each a Gumbel-max selection "
        "and a Gaussian gradient release); multipliers are relative to the sensitivities: "
        "gumbel_multiplier = λ_G/Δ_s, gaussian_multiplier = σ/Δ_g; rho_per_step is the ρ of one "
        "release (an iteration spends twice that). 'paper' is Theorem 5.1 (zCDP, Bun–Steinke "
        "conversion); 'tight' is the smallest multiplier whose RDP accounting (exact bounded-range "
        "curve, CKS conversion) meets the target, so its eps_zcdp exceeds it. --method "
        "dp-fed-sparse-bnsl or dp-fed-bnsl prints that learner's whole plan: every release a "
        "participant makes, its multiplier and count, and the composed ε.",
    )
    noise.add_argument("--epsilon", type=float, required=True, help="target ε > 0 (required)")
    noise.add_argument("--delta", type=float, default=1e-5, help="target δ in (0, 1)")
    noise.add_argument(
        "--method",
        default="dp-pgcd",
        choices=("dp-pgcd", "dp-fed-sparse-bnsl", "dp-fed-bnsl"),
        help="what to calibrate: DP-PGCD's steps alone, or a private learner's whole plan",
    )
    noise.add_argument(
        "--rounds",
        type=count(1, MAX_COUNT),
        default=None,
        help="communication rounds T (dp-pgcd: default 100; dp-fed-sparse-bnsl: default chosen "
        "from d, n_k, ε, δ)",
    )
    noise.add_argument(
        "--local-iters",
        type=count(1, MAX_COUNT),
        default=None,
        help="local iterations K per round (dp-pgcd: default 10; dp-fed-sparse-bnsl: as --rounds)",
    )
    noise.add_argument(
        "--calibration",
        default=None,
        choices=("tight", "paper", "classic", "zcdp", "all"),
        help="calibration(s): dp-pgcd 'tight', 'paper' or 'all' (default, with the saving line); "
        "dp-fed-sparse-bnsl 'tight' (default) or 'paper'; dp-fed-bnsl 'tight' (default), 'classic' "
        "or 'zcdp'",
    )
    noise.add_argument(
        "--laplace",
        action="store_true",
        help="dp-pgcd: also print the Laplace-noise predecessor (advanced composition)",
    )
    noise.add_argument(
        "--smoothness-d",
        type=count(1, 10**6),
        default=None,
        metavar="D",
        help="dp-pgcd: also print the multiplier for privately estimating the D smoothness "
        "constants (Thm D.1), calibrated to the same (ε, δ)",
    )
    plan = noise.add_argument_group("a learner's plan (--method dp-fed-sparse-bnsl or dp-fed-bnsl)")
    plan.add_argument(
        "--d", type=count(2, 10**6), default=None, help="dp-fed-sparse-bnsl: number of variables"
    )
    plan.add_argument(
        "--n-k",
        type=count(1, 10**9),
        default=None,
        help="dp-fed-sparse-bnsl: the smallest participant's row count (sets T and K; public)",
    )
    plan.add_argument(
        "--feature-bound", type=float, default=None, help="dp-fed-sparse-bnsl: public bound on x_ia²"
    )
    plan.add_argument("--clip", type=float, default=None, help="dp-fed-sparse-bnsl: DP-PGCD clip bound")
    plan.add_argument(
        "--smoothness",
        default=None,
        choices=("private", "bounds"),
        help="dp-fed-sparse-bnsl: smoothness constants estimated privately (default) or the bounds",
    )
    plan.add_argument(
        "--centre",
        default=None,
        choices=("declared", "private"),
        help="both: data declared centred (default), or centred by a private mean",
    )
    plan.add_argument(
        "--warm-start",
        default=None,
        choices=("auto", "covariance", "none"),
        help="dp-fed-sparse-bnsl: the warm start's covariance release ('auto': when d <= 30)",
    )
    plan.add_argument(
        "--clip-norm", type=float, default=None, help="dp-fed-bnsl: row clipping norm R (public)"
    )
    plan.add_argument(
        "--aggregation",
        default=None,
        choices=("local", "secure"),
        help="dp-fed-bnsl: each participant's own Gaussian release (local, default) or one jointly "
        "noised integer release under secure aggregation (secure: needs --d, --n-k, --participants)",
    )
    plan.add_argument(
        "--participants",
        type=count(1, 10**6),
        default=None,
        help="dp-fed-bnsl with --aggregation secure: P, the participants whose shares are summed",
    )
    plan.add_argument(
        "--dropouts",
        type=count(0, 10**6),
        default=None,
        help="dp-fed-bnsl with --aggregation secure: t, participants that may drop out or collude "
        "(each share is sized for P − t honest ones; default 0)",
    )
    add_json_option(noise)
    noise.set_defaults(handler=run_noise)


def add_account_command(
    sub: argparse._SubParsersAction, formatter: Callable[..., argparse.HelpFormatter]
) -> None:
    """Add ``account`` to the sub-parsers ``sub``."""
    account = sub.add_parser(
        "account",
        formatter_class=formatter,
        help=COMMANDS["account"],
        description="ε(δ) for a given noise. --rho R: ε of R-zCDP under the Bun–Steinke and "
        "Canonne–Kamath–Steinke conversions. --sigma S --steps N: ε of N Gaussian releases with "
        "noise multiplier σ/Δ = S under the zcdp, rdp and pld accountants; --selection-scale L adds "
        "N Gumbel-max selections with λ/Δ = L (ε₀ = 2/L bounded range), i.e. N DP-PGCD steps "
        "(pld: Gaussian events only, exact: the releases compose into one Gaussian).",
    )
    which = account.add_mutually_exclusive_group(required=True)
    which.add_argument("--rho", type=float, help="total ρ of a ρ-zCDP mechanism")
    which.add_argument("--sigma", type=float, help="Gaussian noise multiplier σ/Δ (needs --steps)")
    account.add_argument(
        "--steps",
        type=count(1, 10**15),
        default=None,
        metavar="N",
        help="number of Gaussian releases (DP-PGCD steps); with --sigma only",
    )
    account.add_argument(
        "--selection-scale",
        type=float,
        default=None,
        metavar="L",
        help="Gumbel multiplier λ_G/Δ_s of one selection per step; with --sigma only",
    )
    account.add_argument("--delta", type=float, default=1e-5, help="δ in (0, 1)")
    add_json_option(account)
    account.set_defaults(handler=_account)


#: the noise options each --method reads (any other one given is refused, never ignored)
_NOISE_OPTIONS = {
    "dp-pgcd": ("rounds", "local_iters", "calibration", "laplace", "smoothness_d"),
    "dp-fed-sparse-bnsl": (
        "rounds",
        "local_iters",
        "calibration",
        "d",
        "n_k",
        "feature_bound",
        "clip",
        "smoothness",
        "centre",
        "warm_start",
    ),
    "dp-fed-bnsl": (
        "calibration",
        "centre",
        "clip_norm",
        "aggregation",
        "participants",
        "dropouts",
        "d",
        "n_k",
    ),
}
_CALIBRATIONS = {
    "dp-pgcd": ("tight", "paper", "all"),
    "dp-fed-sparse-bnsl": ("tight", "paper"),
    "dp-fed-bnsl": ("tight", "classic", "zcdp"),
}


def _check_noise_options(args: argparse.Namespace) -> None:
    method = getattr(args, "method", "dp-pgcd")
    reads = _NOISE_OPTIONS[method]
    given: set[str] = getattr(args, "given", set())
    for name in sorted(given):
        if name in ("epsilon", "delta", "method", "json") or name in reads:
            continue
        users = [m for m, opts in _NOISE_OPTIONS.items() if name in opts]
        raise CLIError(
            f"--{name.replace('_', '-')} does not apply to --method {method}"
            + (f" (it is read by --method {' and '.join(users)})" if users else "")
        )
    calibration = getattr(args, "calibration", None)
    if calibration is not None and calibration not in _CALIBRATIONS[method]:
        raise CLIError(
            f"--calibration {calibration} does not apply to --method {method}; choose from "
            f"{', '.join(_CALIBRATIONS[method])}"
        )


def run_noise(args: argparse.Namespace) -> int:
    _check_noise_options(args)
    method = getattr(args, "method", "dp-pgcd")
    if method == "dp-fed-bnsl" and getattr(args, "aggregation", None) == "secure":
        return _run_secure_plan(args)
    if method != "dp-pgcd":
        return _run_plan(args, method)
    from .._validation import check_int
    from ..accounting import calibrate_dp_pgcd, calibrate_dp_pgcd_laplace, calibrate_smoothness

    calibration = getattr(args, "calibration", None) or "all"
    args.rounds = 100 if args.rounds is None else args.rounds
    args.local_iters = 10 if args.local_iters is None else args.local_iters
    if args.smoothness_d is not None:
        check_int(args.smoothness_d, "smoothness_d", low=1)
    methods: tuple[Literal["tight", "paper"], ...] = (
        ("tight", "paper") if calibration == "all" else (cast(Literal["tight", "paper"], calibration),)
    )
    scales = {
        m: calibrate_dp_pgcd(
            args.epsilon, args.delta, rounds=args.rounds, local_iters=args.local_iters, method=m
        )
        for m in methods
    }
    rows = [
        {
            "method": m,
            "gumbel_multiplier": s.gumbel_multiplier,
            "gaussian_multiplier": s.gaussian_multiplier,
            "rho_per_step": s.rho_per_step,
            "eps_zcdp": s.epsilon_zcdp,
            "eps_rdp": s.epsilon_rdp,
        }
        for m, s in scales.items()
    ]
    saving = (
        100.0 * (1.0 - scales["tight"].gaussian_multiplier / scales["paper"].gaussian_multiplier)
        if len(scales) == 2
        else None
    )
    smooth: dict[str, float] | None
    laplace = smooth = None
    if args.laplace:
        lap = calibrate_dp_pgcd_laplace(
            args.epsilon, args.delta, rounds=args.rounds, local_iters=args.local_iters
        )
        laplace = {
            "selection_multiplier": lap.selection_multiplier,
            "update_multiplier": lap.update_multiplier,
            "eps_per_step": lap.epsilon_per_step,
        }
    if args.smoothness_d is not None:
        smooth = {
            m: calibrate_smoothness(args.epsilon, args.delta, d=args.smoothness_d, method=m) for m in methods
        }
    one = next(iter(scales.values()))

    if args.json:
        out = {
            "epsilon": one.epsilon,
            "delta": one.delta,
            "rounds": one.rounds,
            "local_iters": one.local_iters,
            "steps": one.steps,
            "rows": rows,
            "saving_percent": saving,
        }
        if laplace is not None:
            out["laplace"] = laplace
        if smooth is not None:
            out["smoothness"] = {"d": args.smoothness_d, **smooth}
        set_json(args, out)

    print(
        f"DP-PGCD for (ε, δ) = ({one.epsilon:g}, {one.delta:g}): T = {one.rounds} rounds × "
        f"K = {one.local_iters} local iterations = {one.steps} steps"
    )
    print(_table(_NOISE_COLUMNS, [[r[c] for c in _NOISE_COLUMNS] for r in rows], round_up=True))
    if saving is not None:
        print(f"tight uses {saving:.1f}% less noise than paper (Theorem 5.1)")
    if laplace is not None:
        print(
            f"\nLaplace predecessor (advanced composition over 2TK = {2 * one.steps} steps; "
            "multipliers b_s/Δ_s and b_g/Δ_g):"
        )
        print(_table(("method",) + tuple(laplace), [["laplace", *laplace.values()]]))
    if smooth is not None:
        print(
            f"\nsmoothness constants (d = {args.smoothness_d} Gaussian releases; multiplier σ_a/(X_a/n_k)):"
        )
        print(_table(("method", "multiplier"), [[m, v] for m, v in smooth.items()], round_up=True))
    return 0


_PLAN_COLUMNS = ("release", "event", "multiplier", "count", "rho")


def _run_plan(args: argparse.Namespace, method: str) -> int:
    """A private learner's whole plan: every release, its multiplier and count, and the ε."""
    from ..accounting import PrivacyLedger, event_rho

    options = {
        k: getattr(args, k)
        for k in _NOISE_OPTIONS[method]
        if k not in ("d", "n_k") and getattr(args, k, None) is not None
    }
    if method == "dp-fed-sparse-bnsl":
        from ..learners.linear.sparse_plan import plan as sparse_plan

        if args.d is None:
            raise CLIError("--method dp-fed-sparse-bnsl needs --d (the number of variables)")
        if args.feature_bound is None:
            raise CLIError(
                "--method dp-fed-sparse-bnsl needs --feature-bound B, a public bound on every x_ia² "
                "in the data's units"
            )
        if (args.rounds is None or args.local_iters is None) and args.n_k is None:
            raise CLIError(
                "--method dp-fed-sparse-bnsl needs --n-k (the smallest participant's rows) to "
                "choose --rounds and --local-iters, or both of those"
            )
        sp = sparse_plan(args.d, epsilon=args.epsilon, delta=args.delta, n_k=args.n_k, **options)
        entries = sp.entries()
        accountant = "rdp"
        head = (
            f"DP-Fed-Sparse-BNSL plan for (ε, δ) = ({sp.epsilon:g}, {sp.delta:g}) per participant, "
            f"d = {args.d}: T = {sp.hyper['rounds']} rounds × K = {sp.hyper['local_iters']} DP-PGCD "
            f"steps, clip {sp.clip:g} ({sp.clip_scheme})"
            + ("" if sp.m_warm is None else f", warm start (clip norm {sp.warm_clip_norm:g})")
        )
        extra = {
            "rounds": sp.hyper["rounds"],
            "local_iters": sp.hyper["local_iters"],
            "dp_pgcd_multiplier": sp.noise.gumbel_multiplier,
            "smoothness_multiplier": sp.m_smooth,
            "centring_multiplier": sp.m_centre,
            "warm_start_multiplier": sp.m_warm,
        }
    else:
        from ..learners.covariance_plan import ACCOUNTANT
        from ..learners.covariance_plan import plan as covariance_plan

        secure_only = [n for n in ("participants", "dropouts", "d", "n_k") if getattr(args, n) is not None]
        if secure_only:
            flag = "--" + secure_only[0].replace("_", "-")
            raise CLIError(f"{flag} applies to --method dp-fed-bnsl with --aggregation secure only")
        options.pop("aggregation", None)
        if args.clip_norm is None:
            raise CLIError(
                "--method dp-fed-bnsl needs --clip-norm R, a public bound on each row's norm in the "
                "data's units"
            )
        cp = covariance_plan(epsilon=args.epsilon, delta=args.delta, **options)
        entries = cp.entries()
        accountant = ACCOUNTANT[str(options.get("calibration", "tight"))]
        head = (
            f"DP-Fed-BNSL plan for (ε, δ) = ({cp.epsilon:g}, {cp.delta:g}) per participant: one "
            f"covariance release of the rows clipped at norm R = {cp.clip_norm:g} (sensitivity "
            f"√2·R²/n_k = {2**0.5 * cp.clip_norm**2:.4g}/n_k)"
            + ("" if cp.z_mean is None else " after one private mean (sensitivity 2R/n_k)")
        )
        extra = {"covariance_multiplier": cp.z_cov, "mean_multiplier": cp.z_mean}
    ledger = PrivacyLedger(accountant=cast(Literal["rdp", "zcdp", "pld"], accountant))
    for e in entries:
        ledger.record(e.label, e.event, e.count)
    rows = []
    for e in entries:
        param = getattr(e.event, "noise_multiplier", None)
        if param is None:  # a selection: its bounded-range ε₀ = 2/m
            param = 2.0 / float(e.event.epsilon0)
        rows.append(
            {
                "release": e.label,
                "event": type(e.event).__name__,
                "multiplier": float(param),
                "count": e.count,
                "rho": e.count * event_rho(e.event)[0],
            }
        )
    spent = {
        a: ledger.epsilon(args.delta, accountant=cast(Literal["rdp", "zcdp", "pld"], a))
        for a in dict.fromkeys((accountant, "zcdp"))
    }
    print(head)
    print(_table(_PLAN_COLUMNS, [[r[c] for c in _PLAN_COLUMNS] for r in rows], round_up=True))
    print(
        "multiplier: noise over sensitivity (a selection's: λ/Δ, its ε₀ = 2/multiplier); "
        + "; ".join(f"ε({args.delta:g}) by {a}: {v:.6g}" for a, v in spent.items())
    )
    set_json(
        args,
        {
            "method": method,
            "epsilon": args.epsilon,
            "delta": args.delta,
            "releases": rows,
            "accountant": accountant,
            "spent": spent,
            **extra,
        },
    )
    return 0


def _run_secure_plan(args: argparse.Namespace) -> int:
    """DP-Fed-BNSL's joint release under secure aggregation: the grid, the shares, the modulus,
    the noise per released entry against the local releases' at the same (ε, δ)."""
    import math

    from ..accounting import event_rho
    from ..learners.covariance_plan import plan as covariance_plan
    from ..learners.covariance_release import release_settings, secure_plan

    for name, what in (
        ("clip_norm", "--clip-norm R, a public bound on each row's norm in the data's units"),
        ("d", "--d, the number of variables"),
        ("n_k", "--n-k, the rows per participant (the plan is sized for P × n_k rows)"),
        ("participants", "--participants P"),
    ):
        if getattr(args, name) is None:
            raise CLIError(f"--method dp-fed-bnsl --aggregation secure needs {what}")
    if args.calibration not in (None, "tight") or args.centre not in (None, "declared"):
        raise CLIError(
            "--aggregation secure releases declared-centred data with its own accounting; "
            "--calibration and --centre do not apply"
        )
    P, d, n_k = args.participants, args.d, args.n_k
    settings = release_settings(
        epsilon=args.epsilon,
        delta=args.delta,
        clip_norm=args.clip_norm,
        participants=P,
        n_total=P * n_k,
        dropouts=0 if args.dropouts is None else args.dropouts,
    )
    pl = secure_plan(settings, d=d)
    local = covariance_plan(epsilon=args.epsilon, delta=args.delta, clip_norm=args.clip_norm, psd=False)
    # the local releases averaged over P participants of n_k rows: z·√2·R²·√P/(P·n_k) per entry
    local_sd = local.z_cov * math.sqrt(2.0) * args.clip_norm**2 * math.sqrt(P) / (P * n_k)
    rho = event_rho(pl.event)[0]
    rows = [
        {
            "release": "covariance (joint)",
            "event": type(pl.event).__name__,
            "multiplier": math.sqrt(pl.variance) / pl.l2_sensitivity,
            "count": 1,
            "rho": rho,
        }
    ]
    print(
        f"DP-Fed-BNSL plan under secure aggregation for (ε, δ) = ({settings['epsilon']:g}, "
        f"{settings['delta']:g}) per participant, d = {d}, P = {P} × n_k = {n_k} rows, t = "
        f"{pl.dropouts}: one jointly noised covariance ({pl.noise}; each share sized for "
        f"{pl.honest} honest shares)"
    )
    print(_table(_PLAN_COLUMNS, [[r[c] for c in _PLAN_COLUMNS] for r in rows], round_up=True))
    print(
        f"grid: rows clipped at R = {pl.clip_norm:g}, scaled by γ = {pl.scale:.6g} and rounded "
        f"(‖q‖² ≤ B = {pl.norm_bound:g}); sensitivities Δ₂ = {pl.l2_sensitivity:.6g}, "
        f"Δ₁ = {pl.l1_sensitivity:.6g}; modulus 2^{pl.modulus_bits}, wrap-around probability "
        f"≤ {pl.wrap:.3g}"
    )
    # all P shares in the sum carry P/(P − t) times the honest variance the guarantee rests on
    released_sd = pl.covariance_sd * math.sqrt(P / pl.honest)
    print(
        f"noise sd per released covariance entry: {released_sd:.6g} when all {P} shares arrive"
        + ("" if pl.dropouts == 0 else f" ({pl.covariance_sd:.6g} from the {pl.honest} honest ones)")
        + f"; the local releases averaged: {local_sd:.6g} ({local_sd / released_sd:.2f}× that); "
        f"ε({args.delta:g}) by rdp: {pl.spent:.6g}"
    )
    set_json(
        args,
        {
            "method": "dp-fed-bnsl",
            "aggregation": "secure",
            "epsilon": args.epsilon,
            "delta": args.delta,
            "releases": rows,
            "accountant": "rdp",
            "spent": {"rdp": pl.spent},
            "participants": P,
            "dropouts": pl.dropouts,
            "noise": pl.noise,
            "scale": pl.scale,
            "norm_bound": pl.norm_bound,
            "modulus_bits": pl.modulus_bits,
            "wrap": pl.wrap,
            "covariance_sd": released_sd,
            "honest_covariance_sd": pl.covariance_sd,
            "local_covariance_sd": local_sd,
        },
    )
    return 0


def _account(args: argparse.Namespace) -> int:
    from dp_accounting import GaussianDpEvent, UnsupportedEventError

    from .._validation import check_int, check_real
    from ..accounting import BoundedRangeDpEvent, PrivacyLedger, rho_to_epsilon

    if args.rho is not None:
        if args.steps is not None or args.selection_scale is not None:
            raise CLIError("--steps and --selection-scale go with --sigma, not --rho")
        rho = check_real(args.rho, "rho", low=0.0)
        # cast: older mypy releases infer `str` for c (no behaviour change)
        eps_rho = {
            c: rho_to_epsilon(rho, args.delta, conversion=cast(Literal["bun-steinke", "cks"], c))
            for c in ("bun-steinke", "cks")
        }
        print(f"ρ = {rho:g} zCDP at δ = {args.delta:g}")
        print(_table(("conversion", "epsilon"), [[c, e] for c, e in eps_rho.items()], round_up=True))
        set_json(args, {"rho": rho, "delta": args.delta, "epsilon": eps_rho})
        return 0

    if args.steps is None:
        raise CLIError("--sigma needs --steps N (the number of Gaussian releases)")
    sigma = check_real(args.sigma, "sigma", low=0.0, low_open=True)
    steps = check_int(args.steps, "steps", low=1)
    ledger = PrivacyLedger()
    if args.selection_scale is not None:
        scale = check_real(args.selection_scale, "selection_scale", low=0.0, low_open=True)
        ledger.record("select", BoundedRangeDpEvent(2.0 / scale), steps)
    ledger.record("gradient", GaussianDpEvent(sigma), steps)
    eps: dict[str, float | None] = {
        a: ledger.epsilon(args.delta, accountant=cast(Literal["zcdp", "rdp"], a)) for a in ("zcdp", "rdp")
    }
    if args.selection_scale is not None:
        eps["pld"], pld_note = None, "n/a (Gaussian events only)"
    else:
        try:
            eps["pld"], pld_note = ledger.epsilon(args.delta, accountant="pld"), None
        except UnsupportedEventError:  # σ/Δ or δ beyond what the PLD accountant represents
            eps["pld"], pld_note = None, "n/a (beyond the PLD accountant's range)"
    what = (
        f"{steps} DP-PGCD step(s): Gumbel-max selection with λ/Δ = {args.selection_scale:g} "
        f"(ε₀ = {2.0 / args.selection_scale:.6g}) and Gaussian release with σ/Δ = {sigma:g}"
        if args.selection_scale is not None
        else f"{steps} Gaussian release(s) with σ/Δ = {sigma:g}"
    )
    print(f"{what}; ρ = {ledger.rho():.6g} in total; δ = {args.delta:g}")
    print(
        _table(
            ("accountant", "epsilon"),
            [[a, pld_note if e is None else e] for a, e in eps.items()],
            round_up=True,
        )
    )
    set_json(
        args,
        {
            "sigma": sigma,
            "steps": steps,
            "selection_scale": args.selection_scale,
            "delta": args.delta,
            "rho": ledger.rho(),
            "epsilon": eps,
        },
    )
    return 0
