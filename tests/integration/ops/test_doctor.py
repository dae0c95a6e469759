"""``cypher-gateway doctor`` against the real Docker, sandbox image and Neo4j.

All checks hold on a set-up machine (exit 0); a bad account fails the read with the
credentials fix while the box still proves sealed; a sandbox given a network is caught
by the live egress probe.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from gateway import scope_survey
from gateway.connection import Neo4jConnection
from gateway.ops import doctor
from gateway.policy import DEFAULT_POLICY_PATH, load_policy
from gateway.runner import SandboxRunner
from tests.support.env import neo4j_env
from tests.support.graph import labelled_graph
from tests.support.paths import GATEWAY_CLI


def _doctor(env: dict[str, str], cwd: Path) -> tuple[int, dict[str, dict[str, Any]]]:
    done = subprocess.run([GATEWAY_CLI, "doctor", "--json"], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=240, check=False)  # fmt: skip
    report = json.loads(done.stdout)
    return done.returncode, {check["name"]: check for check in report["checks"]}


def test_every_check_holds_on_a_set_up_machine(
    neo4j_connection: Neo4jConnection, neo4j_driver: Any, sandbox_image: str, tmp_path: Path
) -> None:
    env = neo4j_env(neo4j_connection, GATEWAY_SANDBOX_IMAGE=sandbox_image, GATEWAY_AUDIT_PATH=str(tmp_path / "a.jsonl"))
    # What the default policy names, present in the shared graph whatever other tests hold.
    label = f"DoctorFits{uuid.uuid4().hex[:8]}"
    seed = [f"CREATE (a:{label} {{layers: []}})-[:SUPERSEDES {{layers: []}}]->(b:{label} {{layers: []}}), "
            "(b)-[:CONTRADICTS {layers: []}]->(a)"]  # fmt: skip
    with labelled_graph(neo4j_driver, label, seed):
        code, checks = _doctor(env, tmp_path)
    assert {name: c["status"] for name, c in checks.items() if c["status"] != "ok"} == {}
    assert "'layers' is in use" in checks["scope vs graph"]["detail"]
    assert code == 0
    assert "READ transaction" in checks["neo4j read"]["detail"]
    assert "sees only lo" in checks["sandbox egress"]["detail"]
    assert neo4j_connection.password.get_secret_value() not in json.dumps(checks)


def test_an_account_neo4j_refuses_fails_the_read_with_the_credentials_fix(
    neo4j_connection: Neo4jConnection, sandbox_image: str, tmp_path: Path
) -> None:
    # An unknown user, not a wrong password for the real one: Neo4j locks a user out after
    # repeated failures, and the other tests share that user.
    env = neo4j_env(neo4j_connection, NEO4J_USER=f"nobody-{uuid.uuid4().hex[:8]}", GATEWAY_SANDBOX_IMAGE=sandbox_image,
                    GATEWAY_AUDIT_PATH=str(tmp_path / "a.jsonl"))  # fmt: skip
    code, checks = _doctor(env, tmp_path)
    assert code == 1
    assert checks["neo4j read"]["status"] == "failed", checks["neo4j read"]
    assert "NEO4J_USER and NEO4J_PASSWORD" in checks["neo4j read"]["fix"]
    # The box is tested all the same: egress does not depend on the account.
    assert checks["sandbox"]["status"] == "ok" and checks["sandbox egress"]["status"] == "ok"


def test_a_sandbox_with_a_network_fails_the_egress_check(
    neo4j_connection: Neo4jConnection, sandbox_image: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in neo4j_env(neo4j_connection, GATEWAY_SANDBOX_IMAGE=sandbox_image,
                                 GATEWAY_AUDIT_PATH=str(tmp_path / "a.jsonl")).items():  # fmt: skip
        monkeypatch.setenv(name, value)
    pool_spec = SandboxRunner.sandbox_spec

    def with_a_network(runner: SandboxRunner) -> dict[str, Any]:
        # What a daemon or runtime that ignores --network none would hand a query.
        return {**pool_spec(runner), "network_mode": "bridge"}

    monkeypatch.setattr(SandboxRunner, "sandbox_spec", with_a_network)
    report = doctor.diagnose()
    checks = {check.name: check for check in report.checks}
    assert not report.ok
    egress = checks["sandbox egress"]
    assert egress.status == "failed" and "not sealed" in egress.detail and "eth0" in egress.detail, egress
    assert egress.fix is not None and "do not serve" in egress.fix
    assert checks["neo4j read"].status == "ok"  # only the box was changed


def _policy_file(tmp_path: Path, prop: str, types: list[str]) -> Path:
    text = Path(DEFAULT_POLICY_PATH).read_text(encoding="utf-8")
    text = text.replace("layers_property: layers", f"layers_property: {prop}")
    text = text.replace("bookkeeping_relationship_types: [SUPERSEDES, CONTRADICTS]",
                        f"bookkeeping_relationship_types: [{', '.join(types)}]")  # fmt: skip
    text = text.replace("denied_relationship_types: [SUPERSEDES, CONTRADICTS]", "denied_relationship_types: []")
    path = tmp_path / "policy.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_scope_property_the_graph_never_carries_fails_with_the_fix(
    neo4j_connection: Neo4jConnection, neo4j_driver: Any, sandbox_image: str, tmp_path: Path
) -> None:
    # The reported leak's set-up: the graph's scope property is named otherwise than the policy's.
    unique = uuid.uuid4().hex[:8]
    prop, kind = f"layers_{unique}", f"SUPERSEDES_{unique}"
    label = f"DoctorScope{unique}"
    with labelled_graph(neo4j_driver, label, [f"CREATE (:{label} {{layer_ids: ['x']}})-[:{kind}]->(:{label})"]):
        env = neo4j_env(neo4j_connection, GATEWAY_SANDBOX_IMAGE=sandbox_image,
                        GATEWAY_AUDIT_PATH=str(tmp_path / "a.jsonl"),
                        GATEWAY_POLICY_FILE=str(_policy_file(tmp_path, prop, [kind, f"GONE_{unique}"])))  # fmt: skip
        code, checks = _doctor(env, tmp_path)
    assert code == 1
    scope = checks["scope vs graph"]
    assert scope["status"] == "failed", scope
    assert f"'{prop}' occurs on no node or relationship" in scope["detail"]
    assert f"'GONE_{unique}' named in scope.bookkeeping_relationship_types occurs nowhere" in scope["detail"]
    assert f"'{kind}' named in" not in scope["detail"]
    assert "set scope.layers_property to the property your graph uses, or tag elements" in scope["fix"]


def test_the_survey_counts_what_the_policy_hides_per_label_and_type(neo4j_driver: Any) -> None:
    unique = uuid.uuid4().hex[:8]
    label, kind, prop = f"Survey{unique}", f"LINK_{unique}", f"layers_{unique}"
    seed = [
        f"CREATE (a:{label} {{{prop}: []}}), (b:{label} {{{prop}: ['x']}}), (:{label}), (:{label} {{{prop}: 'x'}}), "
        f"(:{label} {{{prop}: [1]}}), (a)-[:{kind} {{{prop}: []}}]->(b), (a)-[:{kind}]->(b)"
    ]  # fmt: skip
    policy = load_policy()
    policy = policy.model_copy(update={"scope": policy.scope.model_copy(update={"layers_property": prop})})

    def run(cypher: str, params: dict[str, Any]) -> list[list[Any]]:
        records, _, _ = neo4j_driver.execute_query(cypher, params, routing_="r")
        return [list(record.values()) for record in records]

    with labelled_graph(neo4j_driver, label, seed):
        found = scope_survey.survey(policy, run)
    assert found.property_found
    by_name = {(h.kind, h.name): (h.total, h.untagged, h.malformed) for h in found.hidden}
    assert by_name[("label", label)] == (5, 1, 2)
    assert by_name[("type", kind)] == (2, 1, 0)
    assert f"label {label}: 1 untagged, 2 malformed of 5" in found.hidden_summary(limit=10_000)


def test_the_mentis_template_passes_on_the_mentis_fixture_and_says_nothing_of_layers(
    neo4j_connection: Neo4jConnection, sandbox_image: str, tmp_path: Path
) -> None:
    from gateway.mnr.seed import seed_builtin

    seed_builtin(neo4j_connection, "mentis")
    init = subprocess.run([GATEWAY_CLI, "policy", "init", "--template", "mentis"], capture_output=True, text=True,
                          timeout=60, check=True)  # fmt: skip
    policy = tmp_path / "mentis.yaml"
    policy.write_text(init.stdout, encoding="utf-8")
    # The Mentis rules read `repositories`: a principal source must supply it (doctor's identity check).
    env = neo4j_env(neo4j_connection, GATEWAY_SANDBOX_IMAGE=sandbox_image, GATEWAY_AUDIT_PATH=str(tmp_path / "a.jsonl"),
                    GATEWAY_POLICY_FILE=str(policy), GATEWAY_STDIO_ATTRIBUTES="repositories=acme/payments")  # fmt: skip
    code, checks = _doctor(env, tmp_path)
    scope = checks["scope vs graph"]
    assert scope["status"] == "ok", scope
    # The Mentis rules read no layers list: no line about one (in use, untagged counts).
    assert "layers" not in scope["detail"] and "untagged" not in scope["detail"], scope
    assert {name: c["status"] for name, c in checks.items() if c["status"] != "ok"} == {} and code == 0
