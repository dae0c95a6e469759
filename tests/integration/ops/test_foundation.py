"""The foundation: real Neo4j, real Docker, offline images, the first end-to-end path."""

from __future__ import annotations

import json
import subprocess
import uuid
from typing import Any

import pytest

from gateway import image_tag, managed_neo4j
from gateway.connection import Neo4jConnection
from gateway.ops import images, neo4j_local


def docker_run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run the docker CLI; here it states intent more plainly than the SDK."""
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, check=False)


COUNT_IN_CONTAINER = """
import json, os, neo4j
with neo4j.GraphDatabase.driver(os.environ["NEO4J_URI"],
        auth=(os.environ["NEO4J_USER"], os.environ["NEO4J_PASSWORD"])) as driver:
    with driver.session(database="neo4j", default_access_mode=neo4j.READ_ACCESS) as session:
        c = session.execute_read(lambda tx: tx.run("MATCH (n) RETURN count(n) AS c").single()["c"])
print(json.dumps({"c": c}))
"""


def test_count_through_a_sandbox_image_container_to_a_neo4j_container(sandbox_image: str, neo4j_image: str) -> None:
    """MATCH (n) RETURN count(n) from inside a sandbox-image container, against a fresh Neo4j
    container on a private Docker network, so the expected count is exact."""
    from testcontainers.community.neo4j import Neo4jContainer

    network = f"cgw-foundation-{uuid.uuid4().hex[:8]}"
    assert docker_run("network", "create", network).returncode == 0
    try:
        with Neo4jContainer(image=neo4j_image, password="foundation-pw").with_kwargs(
            network=network, hostname="neo4j"
        ) as container:
            with container.get_driver() as driver:
                driver.execute_query("UNWIND range(1, 37) AS i CREATE (:Seed {i: i})")
            run = docker_run(
                "run", "--rm", "--network", network, "--read-only", "--cap-drop", "ALL",
                "--security-opt", "no-new-privileges", "--tmpfs", "/tmp",
                "-e", "NEO4J_URI=bolt://neo4j:7687", "-e", "NEO4J_USER=neo4j", "-e", "NEO4J_PASSWORD=foundation-pw",
                "--entrypoint", "python3", sandbox_image, "-c", COUNT_IN_CONTAINER,
            )  # fmt: skip
            assert run.returncode == 0, run.stderr
            assert json.loads(run.stdout.strip().splitlines()[-1]) == {"c": 37}
    finally:
        docker_run("network", "rm", network)


def test_a_write_in_a_read_transaction_is_refused_by_neo4j(
    neo4j_connection: Neo4jConnection, neo4j_driver: Any
) -> None:
    """The property the whole design leans on: this single Community server refuses a write
    sent in a READ access-mode transaction, with Neo.ClientError.Statement.AccessMode."""
    import neo4j
    from neo4j.exceptions import ClientError

    marker = f"AccessModeProbe_{uuid.uuid4().hex[:8]}"

    def count() -> int:
        records, _, _ = neo4j_driver.execute_query(f"MATCH (n:`{marker}`) RETURN count(n) AS c")
        return int(records[0]["c"])

    before = count()
    with (
        neo4j_driver.session(database="neo4j", default_access_mode=neo4j.READ_ACCESS) as session,
        pytest.raises(ClientError) as refused,
    ):
        session.execute_read(lambda tx: tx.run(f"CREATE (:`{marker}`) RETURN 1").consume())
    assert refused.value.code == "Neo.ClientError.Statement.AccessMode"
    assert "Writing in read access mode not allowed" in (refused.value.message or "")
    assert count() == before == 0


def test_neo4j_start_is_idempotent(neo4j_connection: Neo4jConnection) -> None:
    first = neo4j_local.status()
    again = neo4j_local.start()
    assert again == managed_neo4j.connection_info()
    assert neo4j_local.status()["pid"] == first["pid"] is not None


def test_image_tags_are_content_hashes_and_builds_are_skipped(sandbox_image: str) -> None:
    assert sandbox_image == image_tag.sandbox_image_tag() == image_tag.sandbox_image_tag()
    created = docker_run("image", "inspect", "--format", "{{.Id}}", sandbox_image).stdout
    assert images.ensure_sandbox_image() == sandbox_image
    assert docker_run("image", "inspect", "--format", "{{.Id}}", sandbox_image).stdout == created


def test_sandbox_image_runs_as_non_root_with_the_driver(sandbox_image: str) -> None:
    run = docker_run(
        "run", "--rm", "--network", "none", "--entrypoint", "python3", sandbox_image,
        "-c", "import os, neo4j, httpx, sandbox.wire; print(os.getuid(), neo4j.__version__)",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    uid, version = run.stdout.split()
    assert uid == "10001"
    assert version.startswith(("5.", "6."))
