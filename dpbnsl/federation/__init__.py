"""The federation layer: what crosses the wire and who sends it.

- :mod:`~dpbnsl.federation.messages`: message records, transcripts, byte counts and the in-process
  round driver (re-exported here: ``from dpbnsl.federation import Transcript``);
- :mod:`~dpbnsl.federation.protocol`: hosted protocols, participant and server objects that run in
  one process or on separate machines;
- :mod:`~dpbnsl.federation.secure_sum`: uploads the server can only read summed (secure
  aggregation's seam);
- :mod:`~dpbnsl.federation.guard`: what a private participant enforces on its own (its budget, its
  plan of requests, data-free failures).
"""

from __future__ import annotations

from .messages import (
    FLOAT_BYTES,
    INDEX_BYTES,
    SECURE_SUM,
    SERVER,
    SETUP_ROUND,
    Dense,
    Masked,
    Message,
    Payload,
    ServerReply,
    Sparse,
    Transcript,
    run_rounds,
)

__all__ = [
    "SERVER",
    "SECURE_SUM",
    "SETUP_ROUND",
    "FLOAT_BYTES",
    "INDEX_BYTES",
    "Dense",
    "Sparse",
    "Masked",
    "Payload",
    "Message",
    "Transcript",
    "ServerReply",
    "run_rounds",
]
