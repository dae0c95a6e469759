"""Byte pumps for the in-sandbox shim (one or two connections per job).

The bytes are never looked at: Bolt passes through unchanged. Each direction
is one thread; when either side closes, both sockets are closed so no
half-open connection lingers.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable

CHUNK = 65536


def _pump(src: socket.socket, dst: socket.socket, done: threading.Event) -> None:
    try:
        while True:
            data = src.recv(CHUNK)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        # Shut both sockets down before anyone may close them: shutdown wakes the other pump's
        # blocked recv() and sends the peer its FIN, whereas close() on Linux does neither while
        # another thread still blocks on the socket, and the peer would wait for ever.
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
        done.set()


def splice(a: socket.socket, b: socket.socket, on_close: Callable[[], None] | None = None) -> None:
    """Copy bytes both ways between ``a`` and ``b`` in daemon threads until either closes."""
    done = threading.Event()

    def close_when_done() -> None:
        done.wait()
        # Let the other direction observe the shutdown, then release the descriptors.
        for s in (a, b):
            with contextlib.suppress(OSError):
                s.close()
        if on_close is not None:
            on_close()

    for src, dst in ((a, b), (b, a)):
        threading.Thread(target=_pump, args=(src, dst, done), daemon=True).start()
    threading.Thread(target=close_when_done, daemon=True).start()
