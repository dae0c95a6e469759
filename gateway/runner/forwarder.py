"""The forwarder container and the socket volume it shares with the sandboxes.

One forwarder per runner. It is the only container with a network, and its
target is fixed on its command line: it relays bytes from the socket to the
configured Neo4j host:port and can be made to connect nowhere else.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from gateway.runner.docker_io import forwarder_spec, labels
from gateway.runner.settings import RunnerSettings
from sandbox.wire import FORWARDER_READY, SANDBOX_UID


class Forwarder:
    def __init__(self, client: Any, settings: RunnerSettings, runner_id: str, runtime: str) -> None:
        self.client = client
        self.settings = settings
        self.runner_id = runner_id
        self.runtime = runtime
        self.volume_name = f"cgw-sock-{runner_id}"
        self.container: Any = None

    def start(self, timeout: float = 20.0) -> None:
        # A tmpfs volume owned by the sandbox uid: the socket never touches a disk,
        # and no host directory is mounted anywhere.
        self.client.volumes.create(
            name=self.volume_name,
            driver="local",
            driver_opts={
                "type": "tmpfs",
                "device": "tmpfs",
                "o": f"uid={SANDBOX_UID},gid={SANDBOX_UID},mode=0750,size=1m",
            },
            labels=labels("socket", self.runner_id),
        )
        self._run(timeout)

    def restart(self, timeout: float = 20.0) -> None:
        """Replace a dead forwarder container; the volume (and so the socket path) stays."""
        if self.container is not None:
            with contextlib.suppress(Exception):
                self.container.remove(force=True)
        self._run(timeout)

    def _run(self, timeout: float) -> None:
        spec = forwarder_spec(self.settings, self.volume_name, self.runner_id, runtime=self.runtime)
        self.container = self.client.containers.run(**spec)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.container.reload()
            if self.container.status not in ("created", "running"):
                raise RuntimeError(f"the forwarder exited: {self.container.logs(tail=20)!r}")
            if FORWARDER_READY.encode() in self.container.logs():
                return
            time.sleep(0.05)
        raise TimeoutError("the forwarder did not start listening in time")

    def running(self) -> bool:
        if self.container is None:
            return False
        try:
            self.container.reload()
        except Exception:
            return False
        return bool(self.container.status == "running")

    def close(self) -> None:
        if self.container is not None:
            with contextlib.suppress(Exception):
                self.container.remove(force=True)
            self.container = None
        with contextlib.suppress(Exception):
            self.client.volumes.get(self.volume_name).remove(force=True)
