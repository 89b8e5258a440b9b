"""The hosted protocols by learner name: how to build one participant from its own data and the
public settings, how to build the server, and how to read the learned graph off the server at the
end. ``dpbnsl.flower`` runs any of them; the in-process learners drive the same objects."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..federation.protocol import HostedParticipant, HostedServer
from .constraint.hosted_fed_pc import FedPCParticipant, FedPCServer
from .covariance_release import RELEASE_KEYS, SecureCovarianceParticipant, SecureCovarianceServer
from .linear.hosted_fed_bnsl import DPFedBNSLParticipant, FedBNSLParticipant, FedBNSLServer, fed_bnsl_settings
from .linear.hosted_sparse import DPFedSparseParticipant, FedSparseParticipant, SparseServer
from .linear.secure_covariance import notears_fit, secure_settings
from .nonlinear import ds_fcd as _fcd
from .nonlinear.hosted_mlp import MLPADMMParticipant, MLPADMMServer
from .plain_release import PLAIN_KEYS, PlainSecureParticipant, PlainSecureServer
from .temporal.hosted_fed_dbn import FedDBNParticipant, HostedFedDBNServer

__all__ = ["HostedProtocol", "HOSTED", "hosted"]


@dataclass(frozen=True)
class HostedProtocol:
    """One learner's hosted protocol. ``participant(X, settings=, participant=, rng=, budget=,
    columns=)`` and ``server(settings=, n_participants=)`` build the two sides; ``private`` says
    whether participants need a random generator and keep a ledger; ``server_random`` whether the
    server draws public randomness (then ``server(..., rng=)``)."""

    name: str
    private: bool
    participant: Callable[..., HostedParticipant]
    server: Callable[..., HostedServer]
    #: the server draws public randomness (its factory takes ``rng=``), e.g. initial parameters
    server_random: bool = False
    #: participants draw random numbers though the protocol is not private (their factory takes
    #: ``rng=``); participant k's stream is child ``stream_offset + k`` of the study's seed
    participant_random: bool = False
    stream_offset: int = 0

    def learned(self, server: HostedServer) -> tuple[np.ndarray, np.ndarray, pd.DataFrame]:
        """(thresholded DAG W, raw W, history) from the server at the end of a run."""
        return server.learned()


def _public(factory: Callable[..., HostedParticipant]) -> Callable[..., HostedParticipant]:
    """A non-private participant factory that accepts (and ignores) ``rng`` and ``budget``."""

    def build(
        X: Any,
        *,
        settings: Mapping[str, Any],
        participant: int,
        rng: Any = None,
        budget: Any = None,
        columns: tuple[str, ...] | None = None,
    ) -> HostedParticipant:
        if budget is not None:
            raise ValueError("`budget` applies to private protocols only")
        return factory(X, settings=settings, participant=participant, columns=columns)

    return build


def _secure(settings: Mapping[str, Any]) -> bool:
    """Whether the study runs over secure aggregation (its ``aggregation`` setting)."""
    return settings.get("aggregation") == "secure"


def _rest(settings: Mapping[str, Any], drop: tuple[str, ...] = ()) -> dict[str, Any]:
    return {k: v for k, v in settings.items() if k not in ("aggregation", *drop)}


def _fed_bnsl_participant(
    X: Any, *, settings: Mapping[str, Any], participant: int, **kw: Any
) -> HostedParticipant:
    if _secure(settings):  # the plain secure sum (not private)
        return PlainSecureParticipant(
            X, settings=settings, participant=participant, columns=kw.get("columns")
        )
    return FedBNSLParticipant(X, settings=_rest(settings), participant=participant, columns=kw.get("columns"))


def _fed_bnsl_server(*, settings: Mapping[str, Any], n_participants: int) -> HostedServer:
    if _secure(settings):
        fit = notears_fit(fed_bnsl_settings(**_rest(settings, PLAIN_KEYS)))
        return PlainSecureServer(settings=settings, n_participants=n_participants, fit=fit)
    return FedBNSLServer(settings=_rest(settings), n_participants=n_participants)


def _dp_fed_bnsl_participant(X: Any, *, settings: Mapping[str, Any], **kw: Any) -> HostedParticipant:
    if _secure(settings):  # one share of the jointly noised release
        return SecureCovarianceParticipant(X, settings=settings, **kw)
    return DPFedBNSLParticipant(X, settings=_rest(settings), **kw)


def _dp_fed_bnsl_server(*, settings: Mapping[str, Any], n_participants: int) -> HostedServer:
    if _secure(settings):
        params = secure_settings(**_rest(settings))
        release = {k: params[k] for k in RELEASE_KEYS}
        return SecureCovarianceServer(
            settings=release, n_participants=n_participants, fit=notears_fit(params)
        )
    from .covariance_plan import plan

    return FedBNSLServer(settings=dict(plan(**_rest(settings)).hyper), n_participants=n_participants)


def _dp_cov_pc_participant(X: Any, *, settings: Mapping[str, Any], **kw: Any) -> HostedParticipant:
    if not _secure(settings):
        raise ValueError('dp-cov-pc is hosted with aggregation="secure"; its local release runs in process')
    return SecureCovarianceParticipant(X, settings=settings, **kw)


def _dp_cov_pc_server(*, settings: Mapping[str, Any], n_participants: int) -> HostedServer:
    from .constraint.dp_cov_pc import hosted_pc_fit

    if not _secure(settings):
        raise ValueError('dp-cov-pc is hosted with aggregation="secure"; its local release runs in process')
    release = {k: settings[k] for k in RELEASE_KEYS if k in settings}
    fit = hosted_pc_fit(dict(settings))
    return SecureCovarianceServer(settings=release, n_participants=n_participants, fit=fit)


def _dp_fed_pc_participant(X: Any, *, settings: Mapping[str, Any], **kw: Any) -> HostedParticipant:
    from .constraint.secure_fed_pc import SecurePCParticipant

    if not _secure(settings):
        raise ValueError('dp-fed-pc is hosted with aggregation="secure"; its local vote runs in process')
    return SecurePCParticipant(X, settings=settings, **kw)


def _dp_fed_pc_server(*, settings: Mapping[str, Any], n_participants: int) -> HostedServer:
    from .constraint.secure_fed_pc import SecurePCServer

    if not _secure(settings):
        raise ValueError('dp-fed-pc is hosted with aggregation="secure"; its local vote runs in process')
    return SecurePCServer(settings=settings, n_participants=n_participants)


HOSTED: dict[str, HostedProtocol] = {
    "fed-bnsl": HostedProtocol("fed-bnsl", False, _public(_fed_bnsl_participant), _fed_bnsl_server),
    "dp-fed-bnsl": HostedProtocol("dp-fed-bnsl", True, _dp_fed_bnsl_participant, _dp_fed_bnsl_server),
    "fed-sparse-bnsl": HostedProtocol(
        "fed-sparse-bnsl",
        False,
        _public(FedSparseParticipant),
        lambda *, settings, n_participants: SparseServer(
            settings=settings, n_participants=n_participants, private=False
        ),
    ),
    "dp-fed-sparse-bnsl": HostedProtocol(
        "dp-fed-sparse-bnsl",
        True,
        DPFedSparseParticipant,
        lambda *, settings, n_participants: SparseServer(
            settings=settings, n_participants=n_participants, private=True
        ),
    ),
    "dp-cov-pc": HostedProtocol("dp-cov-pc", True, _dp_cov_pc_participant, _dp_cov_pc_server),
    "dp-fed-pc": HostedProtocol("dp-fed-pc", True, _dp_fed_pc_participant, _dp_fed_pc_server),
    "fed-dbn": HostedProtocol("fed-dbn", False, _public(FedDBNParticipant), HostedFedDBNServer),
    "fed-pc": HostedProtocol("fed-pc", False, _public(FedPCParticipant), FedPCServer),
    # the server draws the public initial parameters (its own `rng=`, fresh entropy by default)
    "fed-bnsl-mlp": HostedProtocol(
        "fed-bnsl-mlp", False, _public(MLPADMMParticipant), MLPADMMServer, server_random=True
    ),
    # the server draws θ⁰, the selections and E h (children 0-2); participant k's stream is child 3 + k
    **{
        name: HostedProtocol(
            name,
            False,
            functools.partial(_fcd.hosted_participant, share_phi=share),
            functools.partial(_fcd.hosted_server, share_phi=share),
            server_random=True,
            participant_random=True,
            stream_offset=3,
        )
        for name, share in (("ds-fcd", False), ("as-fcd", True))
    },
}


def hosted(name: str) -> HostedProtocol:
    """The hosted protocol of learner ``name``; a clear error names the ones there are."""
    try:
        return HOSTED[name]
    except (KeyError, TypeError):
        raise ValueError(f"no hosted protocol for {name!r}; hosted: {', '.join(sorted(HOSTED))}") from None
