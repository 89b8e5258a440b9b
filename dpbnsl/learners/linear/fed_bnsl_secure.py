"""Fed-BNSL's pooled objective over secure aggregation alone (not private): the participants'
exact Gram matrices summed in one secure round (:mod:`dpbnsl.learners.plain_release`), NOTEARS on
the pooled covariance at the server."""

from __future__ import annotations

import time
from typing import Any

import pandas as pd

from ...federation.protocol import run_protocol
from ..plain_release import PlainSecureParticipant, PlainSecureServer, plain_settings
from ..result import LearnResult
from .secure_covariance import notears_fit

__all__ = ["fed_bnsl_secure"]


def fed_bnsl_secure(
    arrays: list[Any], columns: tuple[str, ...] | None, settings: dict[str, Any]
) -> LearnResult:
    """The in-process run of :func:`~dpbnsl.learners.linear.fed_bnsl.fed_bnsl` with
    ``aggregation="secure"`` (``settings``: Fed-BNSL's validated settings plus ``clip_norm``,
    ``modulus_bits`` and ``dropouts``)."""
    plain = plain_settings(participants=len(arrays), n_total=sum(X.shape[0] for X in arrays), **settings)
    start = time.perf_counter()
    clients = [PlainSecureParticipant(X, settings=plain, participant=k) for k, X in enumerate(arrays)]
    server = PlainSecureServer(settings=plain, n_participants=len(arrays), fit=notears_fit(settings))
    transcript = run_protocol(server, clients)["rounds"]
    W, W_raw, history = server.learned()
    release = server.release
    params = dict(settings, **plain, aggregation="secure")
    return LearnResult(
        method="fed-bnsl",
        W=W,
        W_raw=W_raw,
        history=pd.DataFrame(history),
        columns=columns,
        transcript=transcript,
        params=params,
        info={
            "seconds": time.perf_counter() - start,
            "n_samples": tuple(X.shape[0] for X in arrays),
            "release": release,
        },
    )
