"""What a running server is allowed to do, fixed at start-up: the databases and lakes it may open
(users never name a server-side path), and the bounds on every request."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """Start-up configuration of ``tabverify serve`` (see ``create_app``).

    Attributes:
        databases: name -> TARGET (a DuckDB/SQLite file, a Parquet/CSV folder or a postgresql://
            URL), named on the command line; the only databases a request can reach, by name.
        lakes: name -> lake folder, as for ``databases``.
        max_upload_bytes: largest request body; a larger one gets 413 before it is read whole.
        time_limit_s: wall-clock limit of one request's work; past it the worker running it is
            killed and the request gets 504.
        workers: processes that do the work (verifying, crosschecking, scoring). The web server
            itself only parses requests and renders pages, so a slow request never blocks others.
        max_statements: statements one check request may carry.
        max_waiting: requests whose work may be queued or running at once; more get 503 (bounds
            the memory that waiting requests hold).
    """

    databases: dict[str, str] = field(default_factory=dict)
    lakes: dict[str, str] = field(default_factory=dict)
    max_upload_bytes: int = 10 * 1024 * 1024
    time_limit_s: float = 30.0
    workers: int = 2
    max_statements: int = 100
    max_waiting: int = 64

    def __post_init__(self) -> None:
        if self.max_upload_bytes < 1:
            raise ValueError("max_upload_bytes must be positive")
        if not self.time_limit_s > 0:
            raise ValueError("time_limit_s must be positive")
        if self.workers < 1:
            raise ValueError("workers must be at least 1")
        if self.max_waiting < 1:
            raise ValueError("max_waiting must be at least 1")


def is_loopback(host: str) -> bool:
    """True when ``host`` only accepts connections from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
