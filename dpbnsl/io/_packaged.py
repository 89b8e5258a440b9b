"""Reading a data file that ships inside the package, verified against its recorded SHA-256
(of the content, after gunzip for a ``.gz`` file): shared by the Sachs data and the benchmark
networks."""

from __future__ import annotations

import gzip
import hashlib
import zlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from importlib.abc import Traversable

__all__ = ["read_verified"]


def read_verified(
    directory: Traversable,
    name: str,
    expected: str,
    *,
    label: str,
    missing: type[Exception],
    damaged: type[Exception],
    remedy: str = "reinstall dpbnsl",
) -> bytes:
    """The content of ``directory / name`` (gunzipped if it ends in ``.gz``) when its SHA-256 is
    ``expected``. A missing file raises ``missing``, an unreadable or altered one ``damaged``;
    the messages name the ``label``-led file and end with ``remedy``."""
    try:
        raw = (directory / name).read_bytes()
    except FileNotFoundError as err:
        raise missing(
            f"The packaged {label} file {name} is missing from {directory}: the installation is "
            f"incomplete; {remedy}"
        ) from err
    if name.endswith(".gz"):
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as err:
            raise damaged(
                f"The packaged {label} file {name} in {directory} is not a readable gzip file ({err}); "
                "reinstall dpbnsl"
            ) from err
    digest = hashlib.sha256(raw).hexdigest()
    if digest != expected:
        raise damaged(
            f"The packaged {label} file {name} in {directory} does not match its recorded SHA-256 "
            f"(expected {expected}, got {digest}): it is damaged or was edited; {remedy}"
        )
    return raw
