"""The driver inside the sandbox image has the switch that sends BEGIN with the first RUN."""

from __future__ import annotations

from typing import Any

PROBE = """
import contextlib, neo4j
from sandbox.bolt import _pipelined_begin
driver = neo4j.GraphDatabase.driver("bolt://127.0.0.1:9", auth=("neo4j", "x"))
print("pipelined" if not isinstance(_pipelined_begin(driver.session()), contextlib.nullcontext) else "own round trip")
"""


def test_the_image_driver_pipelines_begin(docker_client: Any, sandbox_image: str) -> None:
    out = docker_client.containers.run(
        sandbox_image, entrypoint=["python3", "-c", PROBE], network_mode="none", remove=True,
        labels={"cypher-gateway.test": "driver-probe"},
    )  # fmt: skip
    assert out.decode().strip() == "pipelined"
