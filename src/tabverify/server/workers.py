"""The worker processes that do a request's work, with a hard time limit.

The web server's event loop only parses requests and renders pages; verifying, crosschecking and
scoring run in a pool of processes (pebble's ``ProcessPool``). The time limit counts from the moment
a request's work is queued, so a request waiting behind others is answered 504 at the limit too, and
past it the task is cancelled (its worker killed at once, even inside native code, and replaced). A
worker that dies (out of memory, a crash in a native library) takes only its own request down, and a
worker whose server died kills itself. When more requests wait than ``max_waiting``, new ones are
refused (503) rather than queued without bound.
"""

from __future__ import annotations

import asyncio
import ctypes
import multiprocessing
import os
import signal
from collections.abc import Callable
from concurrent.futures import BrokenExecutor, CancelledError
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TypeVar

from pebble import ProcessExpired, ProcessPool

from tabverify.errors import TabverifyError

T = TypeVar("T")

_PR_SET_PDEATHSIG = 1


class WorkTimeout(TabverifyError):
    """A request's work ran past the server's time limit (HTTP 504)."""


class WorkerDied(TabverifyError):
    """The worker process running a request died (HTTP 500); the pool starts a new one."""


class ServerBusy(TabverifyError):
    """Too many requests are waiting for a worker (HTTP 503); the client should retry later."""


def _worker_setup() -> None:
    """Run in each worker as it starts: SIGTERM kills it at once (pebble's own handler waits for the
    Python code to reach a checkpoint, which native code may not do for seconds), and the kernel
    kills it when the server process dies (no orphan keeps computing a runaway)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: the pool's own shutdown still stops the workers
        return
    if os.getppid() == 1:  # the server died before the request took effect
        os._exit(1)


class Workers:
    """A pool of worker processes; ``await workers.run(function, *args)`` runs one task.

    ``function`` must be a module-level function (it is sent to another process by name) and its
    arguments and result must pickle. Errors the function raises come back as themselves.
    """

    def __init__(self, size: int, time_limit_s: float, max_waiting: int | None = None) -> None:
        self.size = size
        self.time_limit_s = time_limit_s
        self.max_waiting = max_waiting if max_waiting is not None else 32 * size
        self.waiting = 0
        self._pool = self._new_pool()

    def _new_pool(self) -> ProcessPool:
        # spawn, not fork: the server has threads (uvicorn, the thread pool), and a forked child of a
        # threaded parent can inherit a held lock
        return ProcessPool(
            max_workers=self.size, initializer=_worker_setup, context=multiprocessing.get_context("spawn")
        )

    def _restart(self) -> None:
        broken, self._pool = self._pool, self._new_pool()
        broken.stop()

    async def run(self, function: Callable[..., T], *args: Any) -> T:
        """Run ``function(*args)`` in a worker; ``WorkTimeout`` when the answer is not there within
        the time limit of the call (queueing included), ``ServerBusy`` when the queue is full."""
        if self.waiting >= self.max_waiting:
            raise ServerBusy(
                f"the server is busy ({self.waiting} requests in progress); try again in a few seconds"
            )
        self.waiting += 1
        # pebble's own timeout (from the task's start) is a backstop; the deadline below comes first
        future = self._pool.schedule(function, args=args, timeout=self.time_limit_s)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), self.time_limit_s)
        except (TimeoutError, FutureTimeout):
            future.cancel()  # a queued task is dropped, a running one has its worker killed
            raise WorkTimeout(
                f"the request took longer than the server's limit of {self.time_limit_s:g} s and was stopped"
            ) from None
        except ProcessExpired as exc:
            raise WorkerDied(f"the worker process died while handling the request ({exc})") from None
        except BrokenExecutor as exc:  # workers that cannot even start: try a fresh pool next time
            self._restart()
            raise WorkerDied(f"the worker processes could not run the request ({exc})") from None
        except (CancelledError, asyncio.CancelledError):
            future.cancel()  # the request was given up: stop its work
            raise
        finally:
            self.waiting -= 1

    def close(self) -> None:
        """Stop the workers (running tasks are killed)."""
        self._pool.stop()
        self._pool.join(timeout=10)
