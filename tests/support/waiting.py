"""Bounded waits for an observable condition.

The machine is shared and small: how long something takes is a benchmark's business
(bench/), never a test's. A test waits, up to a generous bound, for what it can observe.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TypeVar

T = TypeVar("T")


def wait_until(condition: Callable[[], bool], *, timeout: float, what: str, interval: float = 0.2) -> None:
    """Poll ``condition`` until it holds; fail naming ``what`` if it does not within ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout:g} s")
        time.sleep(interval)


def returns_within(call: Callable[[], T], *, timeout: float, what: str) -> T:
    """``call()``'s result (or exception); fail naming ``what`` if it is still running after ``timeout`` s.

    For "it answers rather than hangs": the bound is generous, the claim is that it returns.
    """
    pool = ThreadPoolExecutor(max_workers=1)
    future = pool.submit(call)
    try:
        return future.result(timeout=timeout)
    except FutureTimeout:
        raise AssertionError(f"{what}: still running after {timeout:g} s") from None
    finally:
        pool.shutdown(wait=False)
