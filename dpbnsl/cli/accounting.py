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
        description="Calibrate the noise of T·K DP-PGCD iterations (each a Gumbel-max selection "
        "and a Gaussian gradient release) to a target (ε, δ). Multipliers are relative to the "
        "sensitivities: gumbel_multiplier = λ_G/Δ_s, gaussian_multiplier = σ/Δ_g. rho_per_step is "
        "the ρ of one release (an iteration spends twice that). 'paper' is Theorem 5.1 (zCDP, "
        "Bun–Steinke conversion); 'tight' is the smallest multiplier whose RDP accounting (exact "
        "bounded-range curve, CKS conversion) meets the target, so its eps_zcdp exceeds it.",
    )
    noise.add_argument("--epsilon", type=float, required=True, help="target ε > 0 (required)")
    noise.add_argument("--delta", type=float, default=1e-5, help="target δ in (0, 1)")
    noise.add_argument("--rounds", type=count(1, MAX_COUNT), default=100, help="communication rounds T")
    noise.add_argument(
        "--local-iters", type=count(1, MAX_COUNT), default=10, help="local iterations K per round"
    )
    noise.add_argument(
        "--method",
        default="all",
        choices=("tight", "paper", "all"),
        help="calibration(s) to print; the saving line needs 'all'",
    )
    noise.add_argument(
        "--laplace",
        action="store_true",
        help="also print the Laplace-noise predecessor (advanced composition)",
    )
    noise.add_argument(
        "--smoothness-d",
        type=count(1, 10**6),
        default=None,
        metavar="D",
        help="also print the multiplier for privately estimating the D smoothness "
        "constants (Thm D.1), calibrated to the same (ε, δ)",
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


def run_noise(args: argparse.Namespace) -> int:
    from .._validation import check_int
    from ..accounting import calibrate_dp_pgcd, calibrate_dp_pgcd_laplace, calibrate_smoothness

    if args.smoothness_d is not None:
        check_int(args.smoothness_d, "smoothness_d", low=1)
    methods: tuple[Literal["tight", "paper"], ...] = (
        ("tight", "paper") if args.method == "all" else (args.method,)
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
        return 0

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
        if args.json:
            set_json(args, {"rho": rho, "delta": args.delta, "epsilon": eps_rho})
            return 0
        print(f"ρ = {rho:g} zCDP at δ = {args.delta:g}")
        print(_table(("conversion", "epsilon"), [[c, e] for c, e in eps_rho.items()], round_up=True))
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
    if args.json:
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
    return 0
