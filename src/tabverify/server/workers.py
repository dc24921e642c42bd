"""The worker processes that do a request's work, with a hard time limit.

The web server's event loop only parses requests and renders pages; verifying, crosschecking and
scoring run in a pool of processes (pebble's ``ProcessPool``). A request past its time limit has its
worker killed and replaced, so a runaway search cannot keep a core busy after the client got 504, and
a worker that dies (out of memory, a crash in a native library) takes only its own request down.
"""

from __future__ import annotations

import asyncio
import multiprocessing
from collections.abc import Callable
from concurrent.futures import CancelledError
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TypeVar

from pebble import ProcessExpired, ProcessPool

from tabverify.errors import TabverifyError

T = TypeVar("T")


class WorkTimeout(TabverifyError):
    """A request's work ran past the server's time limit (HTTP 504)."""


class WorkerDied(TabverifyError):
    """The worker process running a request died (HTTP 500); the pool starts a new one."""


class Workers:
    """A pool of worker processes; ``await workers.run(function, *args)`` runs one task.

    ``function`` must be a module-level function (it is sent to another process by name) and its
    arguments and result must pickle. Errors the function raises come back as themselves.
    """

    def __init__(self, size: int, time_limit_s: float) -> None:
        self.size = size
        self.time_limit_s = time_limit_s
        # spawn, not fork: the server has threads (uvicorn, the thread pool), and a forked child of a
        # threaded parent can inherit a held lock
        self._pool = ProcessPool(max_workers=size, context=multiprocessing.get_context("spawn"))

    async def run(self, function: Callable[..., T], *args: Any) -> T:
        """Run ``function(*args)`` in a worker; raise ``WorkTimeout`` past the time limit."""
        future = self._pool.schedule(function, args=args, timeout=self.time_limit_s)
        try:
            return await asyncio.wrap_future(future)
        except FutureTimeout:
            raise WorkTimeout(
                f"the request took longer than the server's limit of {self.time_limit_s:g} s and was stopped"
            ) from None
        except ProcessExpired as exc:
            raise WorkerDied(f"the worker process died while handling the request ({exc})") from None
        except (CancelledError, asyncio.CancelledError):
            future.cancel()  # the client went away: stop the work (pebble kills a running task)
            raise

    def close(self) -> None:
        """Stop the workers (running tasks are killed)."""
        self._pool.stop()
        self._pool.join(timeout=10)
