"""``make demo``: a scripted agent session through the real MCP server, with a readable report.

    .venv/bin/python -m gateway.ops.demo

What it does, top to bottom:

1. finds Neo4j (``NEO4J_URI`` & co., else the managed local server, started if needed) and
   the sandbox image (built if missing);
2. seeds the fixture memory graph (``gateway/mnr/fixtures/memory.cypher``, marker label
   ``:MnrFixture``) with the harness's own write driver;
3. starts ``cypher-gateway serve`` over stdio as two principals, ``agent-a`` (scope
   ``project-a``) and ``agent-ab`` (``project-a``, ``project-b``), and talks to each through
   the MCP SDK's stdio client, exactly as an agent's MCP client would;
4. starts it once more with the sandbox image name pointing at an image that does not exist
   (the same state as "image removed"), to show ``analyze:disabled``;
5. seeds the Mentis and Mindreader fixture graphs (``builtin:mentis``, ``builtin:mindreader``)
   and starts the server under ``policies/mentis.yaml`` for a recall pinned to one task
   (a caller holding the repository ``acme/payments``), and under ``policies/mindreader.yaml``
   for an agent with an empty scope (global only: the catalog, never an untagged entity);
6. prints what was asked, what came back and which layer decided, and exits non-zero if any
   step did not behave as expected (1) or the set-up failed (2).

This process is a harness, not the gateway: it uses the ``neo4j`` driver to seed and to read
the ground truth it compares against. The gateway processes it starts never load the driver.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import textwrap
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from gateway import catalogue
from gateway.connection import Neo4jConnection
from gateway.errors import SetupError
from gateway.managed_neo4j import Neo4jSetupError
from gateway.policy import POLICIES_DIR, load_policy

# An image tag no build ever produces: the runner cannot start a sandbox, as if it were removed.
MISSING_IMAGE = "cypher-gateway/sandbox:demo-image-that-does-not-exist"
REPOSITORY, TASK_ID = "acme/api", "A-1"
SCOPE_A = ["project-a"]
SCOPE_AB = ["project-a", "project-b"]

HISTORY_QUERY = (
    "MATCH (t:MnrFixture:Task)-[:HAS_ATTEMPT]->(a:Attempt)\n"
    "WHERE t.repository = $repository AND t.taskId = $taskId\n"
    "RETURN a.seq AS seq, a.action AS action, a.check AS check,\n"
    "       a.outdated AS outdated, a.outdatedReason AS outdatedReason\n"
    "ORDER BY seq"
)
FORGOT_TASK_QUERY = (
    "MATCH (t:MnrFixture:Task)-[:HAS_ATTEMPT]->(a:Attempt)\nWHERE t.repository = $repository\nRETURN a.action AS action"
)
AGGREGATE_QUERY = "MATCH (a:MnrFixture:Attempt)\nRETURN a.check AS check, count(*) AS attempts\nORDER BY check"
WRITE_QUERY = "MATCH (f:MnrFixture:Fact {uid: $uid})\nSET f.text = 'overwritten by the agent'\nRETURN f.uid AS uid"
FACTS_QUERY = "MATCH (f:MnrFixture:Fact)\nRETURN f.uid AS uid, f.text AS text\nORDER BY uid"
MANY_ROWS_QUERY = "UNWIND range(1, 1000) AS i\nRETURN i"

# The Mentis graph (gateway/mnr/fixtures/mentis.cypher): the caller holds one repository; the
# graph holds another with a task of the same id.
MENTIS_POLICY = POLICIES_DIR / "mentis.yaml"
MENTIS_REPOSITORIES = ["acme/payments"]
MENTIS_REPOSITORY, MENTIS_TASK_ID = "acme/payments", "PAY-101"
# Named attribute lists for the stdio principal (beside GATEWAY_STDIO_SCOPE, the layers list).
STDIO_ATTRIBUTES_ENV = "GATEWAY_STDIO_ATTRIBUTES"
MENTIS_RECALL_QUERY = (
    "MATCH (:MentisFixture:Repository {name: $repository})-[:HAS_TASK]->(:Task {id: $taskId})\n"
    "      -[:HAS_ATTEMPT]->(a:Attempt)\n"
    "RETURN a.id AS id, a.action AS action, a.check AS check\n"
    "ORDER BY a.createdAt"
)
MENTIS_UNPINNED_QUERY = (
    "MATCH (:MentisFixture:Task)-[:HAS_ATTEMPT]->(a:Attempt)\n"
    "WHERE $repository IS NOT NULL AND $taskId IS NOT NULL\n"
    "RETURN a.id AS id ORDER BY id"
)
MENTIS_ATTEMPTS = ["a1c0ffee-0001", "a1c0ffee-0002", "a1c0ffee-0003"]
# The Mindreader graph (gateway/mnr/fixtures/mindreader.cypher), asked with an empty scope.
MINDREADER_POLICY = POLICIES_DIR / "mindreader.yaml"
MINDREADER_ENTITIES_QUERY = (
    "MATCH (e:MindreaderFixture:Entity)\n"
    "OPTIONAL MATCH (e)-[:INSTANCE_OF]->(c:Class)\n"
    "RETURN e.name AS entity, c.name AS class ORDER BY entity"
)
MINDREADER_GLOBAL = [["London", "Place"], ["Paris", "Place"]]

# What each principal may see of the fixture's facts (fact-r-1 is `restricted`; fact-bad-1's
# malformed `layers` string hides it from everyone).
FACTS_A = ["fact-a-1", "fact-a-2", "fact-ab-1", "fact-g-1", "fact-g-2"]
FACTS_AB = sorted([*FACTS_A, "fact-b-1", "fact-b-2"])


# The demo's server runs one query per container from a small pool: when the script outpaces
# the refill, the gateway says "busy" and the script, like an agent, tries again.
BUSY_RETRIES = 30


def _say(message: str) -> None:
    print(f"[demo] {message}", file=sys.stderr, flush=True)


@dataclass
class Step:
    """One scripted call: what was asked, what came back, which layer decided, as expected or not."""

    title: str
    principal: str
    tool: str
    query: str
    params: dict[str, Any]
    got: list[str] = field(default_factory=list)
    decided_by: str = ""
    ok: bool = False
    problem: str = ""

    def expect(self, condition: bool, problem: str) -> bool:
        if not condition and not self.problem:
            self.problem = problem
        return condition


@dataclass
class Answer:
    """A tool call's outcome: ``data`` for a result, ``error`` for an MCP tool error."""

    data: dict[str, Any] | None
    error: dict[str, Any] | None

    @classmethod
    def of(cls, result: Any) -> Answer:
        if result.is_error:
            structured = result.structured_content or {}
            if isinstance(structured.get("error"), dict):
                return cls(None, structured["error"])
            text = result.content[0].text if result.content else "{}"
            try:
                body = json.loads(text).get("error", {})
            except ValueError:
                body = {"code": "?", "message": text}
            return cls(None, body)
        return cls(result.structured_content or {}, None)


# --- set-up (harness side, write credentials) ------------------------------------------------------


def _connection() -> Neo4jConnection:
    from gateway.ops import neo4j_local

    try:
        return neo4j_local.resolve(start_managed=True)
    except Neo4jSetupError as exc:
        raise SetupError(f"the managed Neo4j could not start: {exc}") from exc


def _sandbox_image() -> str:
    from gateway.ops import images

    try:
        return images.ensure_sandbox_image()
    except Exception as exc:
        raise SetupError(f"the sandbox image could not be built: {exc}") from exc


@dataclass(frozen=True)
class Truth:
    """What the graph really holds (read with the write driver), to compare the agent's view against."""

    attempts_for_task: list[int]
    attempts_total: int
    facts_total: int
    write_target_text: str
    mentis_attempts: int = 0
    mindreader_entities: int = 0
    mindreader_untagged: int = 0


def _seed(connection: Neo4jConnection) -> Truth:
    from gateway.mnr import seed

    try:
        seed.seed_memory(connection)
        seed.seed_builtin(connection, "mentis")
        seed.seed_builtin(connection, "mindreader")
        driver = seed.connect(connection)
    except seed.SeedError as exc:
        raise SetupError(str(exc)) from exc
    try:
        with driver.session(database=connection.database) as session:
            seqs = [r["seq"] for r in session.run(
                "MATCH (:MnrFixture:Task {repository: $r, taskId: $t})-[:HAS_ATTEMPT]->(a) RETURN a.seq AS seq "
                "ORDER BY seq", r=REPOSITORY, t=TASK_ID)]  # fmt: skip
            attempts = session.run("MATCH (a:MnrFixture:Attempt) RETURN count(a) AS c").single(strict=True)["c"]
            facts = session.run("MATCH (f:MnrFixture:Fact) RETURN count(f) AS c").single(strict=True)["c"]
            text = session.run("MATCH (f:MnrFixture:Fact {uid: 'fact-g-1'}) RETURN f.text AS t").single(strict=True)
            mentis = session.run("MATCH (a:MentisFixture:Attempt) RETURN count(a) AS c").single(strict=True)["c"]
            entities = session.run(
                "MATCH (e:MindreaderFixture:Entity) RETURN count(e) AS c, count(e.layers) AS tagged"
            ).single(strict=True)
    finally:
        driver.close()
    return Truth(
        seqs, int(attempts), int(facts), str(text["t"]), mentis_attempts=int(mentis),
        mindreader_entities=int(entities["c"]), mindreader_untagged=int(entities["c"]) - int(entities["tagged"]),
    )  # fmt: skip


def _fact_text(connection: Neo4jConnection, uid: str) -> str | None:
    from gateway.mnr import seed

    driver = seed.connect(connection)
    try:
        with driver.session(database=connection.database) as session:
            record = session.run("MATCH (f:MnrFixture:Fact {uid: $uid}) RETURN f.text AS t", uid=uid).single()
    finally:
        driver.close()
    return None if record is None else str(record["t"])


# --- the server processes --------------------------------------------------------------------------


def _server_command() -> tuple[str, list[str]]:
    script = Path(sys.executable).parent / "cypher-gateway"
    if script.exists():
        return str(script), ["serve"]
    return sys.executable, ["-m", "gateway.cli", "serve"]


def _server_env(
    connection: Neo4jConnection,
    image: str,
    audit: Path,
    principal: str,
    scope: list[str],
    *,
    policy: Path | None = None,
    attributes: dict[str, list[str]] | None = None,
) -> dict[str, str]:
    # Only the settings the demo means: a stray GATEWAY_POLICY_FILE must not change the script.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GATEWAY_", "NEO4J_"))}
    env.update(
        NEO4J_URI=connection.uri, NEO4J_USER=connection.user, NEO4J_PASSWORD=connection.password.get_secret_value(),
        GATEWAY_SANDBOX_IMAGE=image, GATEWAY_POOL_SIZE="1", GATEWAY_AUDIT_PATH=str(audit),
        GATEWAY_STDIO_PRINCIPAL=principal, GATEWAY_STDIO_SCOPE=",".join(scope),
    )  # fmt: skip
    if connection.database:
        env["NEO4J_DATABASE"] = connection.database
    if policy is not None:
        env["GATEWAY_POLICY_FILE"] = str(policy)
    if attributes:
        env[STDIO_ATTRIBUTES_ENV] = json.dumps(attributes)
    return env


Script = Callable[[Client], Awaitable[None]]


def _session(env: dict[str, str], stderr_path: Path, script: Script) -> None:
    command, args = _server_command()
    # The server needs nothing from the current directory: run it in the demo's own.
    params = StdioServerParameters(command=command, args=args, env=env, cwd=str(stderr_path.parent))

    async def main() -> None:
        with stderr_path.open("a", encoding="utf-8") as errlog:
            async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=120) as client:
                await script(client)

    anyio.run(main)


# --- the script ------------------------------------------------------------------------------------


class Demo:
    def __init__(self, connection: Neo4jConnection, image: str, truth: Truth, workdir: Path, *, kept: bool) -> None:
        self.connection, self.image, self.truth, self.workdir, self.kept = connection, image, truth, workdir, kept
        self.steps: list[Step] = []
        self.audit_path = workdir / "audit.jsonl"
        self.max_rows = load_policy().tool("analyze").limits.max_rows
        self.tool_calls = 0

    async def call(self, client: Client, step: Step) -> Answer:
        self.steps.append(step)
        arguments: dict[str, Any] = {"cypher": step.query}
        if step.params:
            arguments["params"] = step.params
        if step.tool == "check":
            arguments["tool"] = "analyze"
        # An agent told "busy" waits as long as the answer says and asks again (each try is audited).
        for _ in range(BUSY_RETRIES):
            self.tool_calls += step.tool != "check"
            answer = Answer.of(await client.call_tool(step.tool, arguments))
            if answer.error is None or answer.error.get("code") != "busy":
                return answer
            await anyio.sleep(answer.error.get("retryAfterMs", 1000) / 1000)
        return answer

    # --- agent-a: project-a only ---

    async def agent_a(self, client: Client) -> None:
        await self._history(client)
        await self._forgot_task(client)
        await self._aggregate(client)
        await self._write(client)
        await self._reserved(client)
        await self._truncated(client)
        await self._facts(client, "agent-a", FACTS_A)

    async def _history(self, client: Client) -> None:
        step = Step("Exact-history recall of task A-1", "agent-a", "recall", HISTORY_QUERY,
                    {"repository": REPOSITORY, "taskId": TASK_ID})  # fmt: skip
        answer = await self.call(client, step)
        if not step.expect(answer.data is not None, f"expected rows, got the error {answer.error}"):
            return
        data = answer.data or {}
        rows = [dict(zip(data["columns"], row, strict=True)) for row in data["rows"]]
        for row in rows:
            marks = [f"check={row['check']}"] + (
                [f"OUTDATED ({row['outdatedReason']})"] if row["outdated"] else []
            )  # fmt: skip
            step.got.append(f"#{row['seq']} {row['action']}  [{', '.join(marks)}]")
        seqs = [row["seq"] for row in rows]
        hidden = sorted(set(self.truth.attempts_for_task) - set(seqs))
        step.decided_by = (
            f"scope rewrite (layer 1): the graph holds attempts {self.truth.attempts_for_task}; "
            f"{hidden} is in layer `restricted` and never left Neo4j; result check redacted "
            f"{data.get('redacted', 0)}; degraded={data['degraded']}"
        )
        step.ok = (
            step.expect(seqs == [1, 2, 3, 5], f"expected attempts [1, 2, 3, 5], got {seqs}")
            and step.expect(any(r["check"] == "failed" for r in rows), "no failed check in the history")
            and step.expect(any(r["outdated"] for r in rows), "no outdated conclusion in the history")
            and step.expect(data["degraded"] == [], f"degraded {data['degraded']}")
        )

    async def _forgot_task(self, client: Client) -> None:
        step = Step("Recall that forgets $taskId", "agent-a", "recall", FORGOT_TASK_QUERY, {"repository": REPOSITORY})
        answer = await self.call(client, step)
        self._expect_rejection(step, answer, catalogue.PARAM_REQUIRED)

    async def _aggregate(self, client: Client) -> None:
        step = Step("Analyze aggregate: attempts by check outcome", "agent-a", "analyze", AGGREGATE_QUERY, {})
        answer = await self.call(client, step)
        if not step.expect(answer.data is not None, f"expected rows, got the error {answer.error}"):
            return
        data = answer.data or {}
        counts = {row[0]: row[1] for row in data["rows"]}
        step.got = [f"{check}: {count}" for check, count in counts.items()]
        check = Step("(check: the query that actually ran)", "agent-a", "check", AGGREGATE_QUERY, {})
        rewritten = str(((await self.call(client, check)).data or {}).get("rewritten") or "")
        check.got = textwrap.wrap(rewritten, 100)[:3] + (["..."] if len(rewritten) > 300 else [])
        check.decided_by = "guard + scope rewrite only; nothing ran (the `rewritten` field)"
        check.ok = check.expect("$__gw_scope" in rewritten, "the rewritten query has no scope predicate")
        step.decided_by = (
            f"scope rewrite (layer 1): counts only what agent-a can see — {sum(counts.values())} of the graph's "
            f"{self.truth.attempts_total} attempts"
        )
        step.ok = step.expect(
            counts == {"failed": 1, "passed": 2, "unverified": 1}, f"unexpected counts {counts}"
        )  # fmt: skip

    async def _write(self, client: Client) -> None:
        step = Step("A write disguised as analysis", "agent-a", "analyze", WRITE_QUERY, {"uid": "fact-g-1"})
        answer = await self.call(client, step)
        if self._expect_rejection(step, answer, catalogue.WRITE_CLAUSE):
            after = _fact_text(self.connection, "fact-g-1")
            step.got.append(f"fact-g-1 in Neo4j afterwards: {after!r}")
            step.ok = step.expect(after == self.truth.write_target_text, "the fact changed")

    async def _reserved(self, client: Client) -> None:
        step = Step("Smuggling a scope through the reserved parameter", "agent-a", "analyze", FACTS_QUERY,
                    {"__gw_scope": ["project-b", "restricted"]})  # fmt: skip
        answer = await self.call(client, step)
        self._expect_rejection(step, answer, catalogue.PARAM_RESERVED)

    async def _facts(self, client: Client, principal: str, expected: list[str]) -> None:
        scope = SCOPE_A if principal == "agent-a" else SCOPE_AB
        step = Step(f"Facts, as {principal} (scope {scope})", principal, "analyze", FACTS_QUERY, {})
        answer = await self.call(client, step)
        if not step.expect(answer.data is not None, f"expected rows, got the error {answer.error}"):
            return
        data = answer.data or {}
        uids = [row[0] for row in data["rows"]]
        step.got = [f"{row[0]}: {row[1]}" for row in data["rows"]]
        step.decided_by = (
            f"scope rewrite (layer 1): {len(uids)} of the graph's {self.truth.facts_total} facts are visible "
            f"to {scope}; `restricted` and malformed `layers` stay hidden"
        )
        if principal == "agent-ab":
            step.got.append(
                f"(agent-a's answer to the same query lacked: {', '.join(sorted(set(FACTS_AB) - set(FACTS_A)))})"
            )
        step.ok = step.expect(uids == expected, f"expected {expected}, got {uids}")

    async def _truncated(self, client: Client) -> None:
        step = Step("A result larger than the policy allows", "agent-a", "analyze", MANY_ROWS_QUERY, {})
        answer = await self.call(client, step)
        if not step.expect(answer.data is not None, f"expected rows, got the error {answer.error}"):
            return
        data = answer.data or {}
        step.got = [f"rowCount={data['rowCount']} truncated={data['truncated']} truncation={data['truncation']} "
                    f"bytes={data['bytes']}"]  # fmt: skip
        step.decided_by = f"sandbox: stopped reading at the policy's {self.max_rows}-row limit"
        step.ok = step.expect(
            data["truncated"] is True and data["truncation"] == "rows" and data["rowCount"] == self.max_rows,
            f"expected truncation at {self.max_rows} rows",
        )

    # --- agent-ab: the same facts query under a wider scope ---

    async def agent_ab(self, client: Client) -> None:
        await self._facts(client, "agent-ab", FACTS_AB)

    # --- the Mentis graph under policies/mentis.yaml ---

    async def mentis_agent(self, client: Client) -> None:
        params = {"repository": MENTIS_REPOSITORY, "taskId": MENTIS_TASK_ID}
        step = Step(f"Mentis recall of {MENTIS_REPOSITORY} {MENTIS_TASK_ID} (policy mentis)", "mentis-agent",
                    "recall", MENTIS_RECALL_QUERY, params)  # fmt: skip
        answer = await self.call(client, step)
        if step.expect(answer.data is not None, f"expected rows, got the error {answer.error}"):
            data = answer.data or {}
            step.got = [f"{row[0]} {row[1]}  [{'check=' + row[2] if row[2] else 'no check: unverified'}]"
                        for row in data["rows"]]  # fmt: skip
            step.decided_by = (
                f"scope rewrite: Repository name in the caller's repositories {MENTIS_REPOSITORIES}, Task and "
                f"Attempt derived through it, recall pinned to $repository/$taskId; degraded={data['degraded']}"
            )
            ids = [row[0] for row in data["rows"]]
            step.ok = (
                step.expect(ids == MENTIS_ATTEMPTS, f"expected {MENTIS_ATTEMPTS}, got {ids}")
                and step.expect([row[2] for row in data["rows"]][1] is None, "attempt 2 should carry no check")
                and step.expect(data["degraded"] == [], f"degraded {data['degraded']}")
            )
        unpinned = Step("Mentis recall that mentions $repository/$taskId but does not use them", "mentis-agent",
                        "recall", MENTIS_UNPINNED_QUERY, params)  # fmt: skip
        answer = await self.call(client, unpinned)
        if unpinned.expect(answer.data is not None, f"expected rows, got the error {answer.error}"):
            ids = [row[0] for row in (answer.data or {})["rows"]]
            unpinned.got = [", ".join(ids) or "(no rows)"]
            unpinned.decided_by = (
                f"recall pins: only {MENTIS_TASK_ID}'s attempts of the graph's {self.truth.mentis_attempts} "
                "(other tasks, and another repository's task of the same id, never left Neo4j)"
            )
            unpinned.ok = unpinned.expect(ids == MENTIS_ATTEMPTS, f"expected {MENTIS_ATTEMPTS}, got {ids}")

    # --- the Mindreader graph under policies/mindreader.yaml, empty scope ---

    async def mindreader_empty(self, client: Client) -> None:
        step = Step("Mindreader entities with an empty scope (policy mindreader)", "nobody", "analyze",
                    MINDREADER_ENTITIES_QUERY, {})  # fmt: skip
        answer = await self.call(client, step)
        if not step.expect(answer.data is not None, f"expected rows, got the error {answer.error}"):
            return
        rows = (answer.data or {})["rows"]
        step.got = [f"{entity} ({cls})" for entity, cls in rows]
        step.decided_by = (
            f"membership rule: an empty scope sees elements whose layers are [] only — {len(rows)} of the graph's "
            f"{self.truth.mindreader_entities} entities, never the {self.truth.mindreader_untagged} without layers; "
            "the catalog (layers []) is visible"
        )
        step.ok = step.expect(rows == MINDREADER_GLOBAL, f"expected {MINDREADER_GLOBAL}, got {rows}")

    # --- no sandbox ---

    async def no_sandbox(self, client: Client) -> None:
        step = Step("The same aggregate with no sandbox available", "agent-a", "analyze", AGGREGATE_QUERY, {})
        answer = await self.call(client, step)
        if not step.expect(answer.data is not None, f"expected a degraded answer, got the error {answer.error}"):
            return
        data = answer.data or {}
        step.got = [f"degraded={data['degraded']} rows={data['rows']}"]
        step.decided_by = "runner: no sandbox can start (image missing); the query ran nowhere"
        step.ok = step.expect(
            data["degraded"] == ["analyze:disabled"] and data["rows"] == [], f"expected analyze:disabled, got {data}"
        )

    # --- helpers ---

    def _expect_rejection(self, step: Step, answer: Answer, expected: catalogue.Rule) -> bool:
        rule = expected.id
        if answer.error is None:
            step.expect(False, f"expected rejection {rule}, got rows {answer.data}")
            return False
        step.got = [f"error {answer.error.get('code')}: {answer.error.get('rule')} — {answer.error.get('reason')}"]
        step.decided_by = f"static guard, rule `{answer.error.get('rule')}` (nothing was sent to a sandbox)"
        step.ok = step.expect(
            answer.error.get("code") == "rejected" and answer.error.get("rule") == rule,
            f"expected rejected/{rule}, got {answer.error}",
        )
        return step.ok

    def audit_step(self) -> None:
        step = Step(
            "The audit log",
            "reviewer",
            "-",
            f"cypher-gateway audit summary --path {self.audit_path}"
            + ("" if self.kept else "   (a temporary directory; --workdir keeps it)"),
            {},
        )
        self.steps.append(step)
        lines = [json.loads(line) for line in self.audit_path.read_text(encoding="utf-8").splitlines() if line]
        decisions: dict[str, int] = {}
        for line in lines:
            key = f"{line['tool']}/{line['decision']}" + (f"/{line['rule']}" if line.get("rule") else "")
            decisions[key] = decisions.get(key, 0) + 1
        step.got = [f"{count} x {key}" for key, count in sorted(decisions.items())]
        raw = self.audit_path.read_text(encoding="utf-8")
        step.decided_by = "one JSON line per recall/analyze call; parameter keys only, never values or credentials"
        # `check` calls may be audited too; every recall/analyze call must be.
        runs = [line for line in lines if line["tool"] in ("recall", "analyze")]
        step.ok = (
            step.expect(len(runs) == self.tool_calls, f"{len(runs)} audit lines for {self.tool_calls} calls")
            and step.expect(
                self.connection.password.get_secret_value() not in raw, "the Neo4j password is in the audit log"
            )
            and step.expect(TASK_ID not in raw and "restricted" not in raw, "a parameter value is in the audit log")
        )

    def run(self) -> None:
        stderr = self.workdir / "server-stderr.log"
        _say("session 1: agent-a (scope project-a) over stdio")
        _session(_server_env(self.connection, self.image, self.audit_path, "agent-a", SCOPE_A), stderr, self.agent_a)
        _say("session 2: agent-ab (scope project-a, project-b) over stdio")
        _session(_server_env(self.connection, self.image, self.audit_path, "agent-ab", SCOPE_AB), stderr,
                 self.agent_ab)  # fmt: skip
        _say(f"session 3: agent-a with the sandbox image missing ({MISSING_IMAGE})")
        disabled_stderr = self.workdir / "server-stderr-no-sandbox.log"
        _session(_server_env(self.connection, MISSING_IMAGE, self.audit_path, "agent-a", SCOPE_A), disabled_stderr,
                 self.no_sandbox)  # fmt: skip
        said = disabled_stderr.read_text(encoding="utf-8").splitlines()
        warned = [line for line in said if "WARNING" in line or "degraded" in line]
        last = self.steps[-1]
        last.got += [f"server stderr: {line.strip()}" for line in warned[:2]]
        last.ok = last.ok and last.expect(bool(warned), "the server did not say on stderr what is missing")
        _say("session 4: mentis-agent (repositories acme/payments) on the Mentis graph, policy mentis")
        _session(_server_env(self.connection, self.image, self.audit_path, "mentis-agent", [], policy=MENTIS_POLICY,
                             attributes={"repositories": MENTIS_REPOSITORIES}), stderr, self.mentis_agent)  # fmt: skip
        _say("session 5: an agent with an empty scope on the Mindreader graph, policy mindreader")
        _session(_server_env(self.connection, self.image, self.audit_path, "nobody", [], policy=MINDREADER_POLICY),
                 stderr, self.mindreader_empty)  # fmt: skip
        self.audit_step()


# --- the report ------------------------------------------------------------------------------------


def header(connection: Neo4jConnection, image: str, truth: Truth) -> str:
    return "\n".join([
        "cypher-gateway demo: an agent's session through the real MCP server (stdio), sandbox and Neo4j",
        f"  graph    the fixture memory graph (:MnrFixture) in {connection.uri}: task {REPOSITORY} {TASK_ID} with "
        f"attempts {truth.attempts_for_task}, {truth.attempts_total} attempts and {truth.facts_total} facts in all",
        f"  agents   agent-a scope {SCOPE_A}; agent-ab scope {SCOPE_AB}",
        f"  server   cypher-gateway serve (default policy), sandbox image {image}",
        f"  then     the Mentis graph (:MentisFixture, {truth.mentis_attempts} attempts) under policies/mentis.yaml "
        f"as mentis-agent (repositories {MENTIS_REPOSITORIES}), and the Mindreader graph (:MindreaderFixture, "
        f"{truth.mindreader_entities} entities) under policies/mindreader.yaml with an empty scope",
        "",
    ])  # fmt: skip


def render(steps: Sequence[Step], elapsed: float) -> str:
    out: list[str] = []
    for n, step in enumerate(steps, 1):
        mark = "ok  " if step.ok else "FAIL"
        out.append(f"[{mark}] {n}. {step.title}")
        params = f"  params={step.params}" if step.params else ""
        out.append(f"       asked   {step.principal} -> {step.tool}{params}")
        out += [f"               {line}" for line in step.query.splitlines()]
        for i, line in enumerate(step.got or ["(nothing)"]):
            out.append(f"       {'got' if i == 0 else '   '}     {line}")
        out.append(f"       decided {step.decided_by}")
        if not step.ok:
            out.append(f"       PROBLEM {step.problem or 'not as expected'}")
        out.append("")
    failed = [s for s in steps if not s.ok]
    verdict = "every step behaved as expected" if not failed else f"{len(failed)} step(s) did NOT behave as expected"
    out.append(f"{len(steps) - len(failed)}/{len(steps)} steps ok in {elapsed:.1f} s: {verdict}")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gateway.ops.demo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, help="keep the audit log and server stderr here (default: a temp dir)")
    args = parser.parse_args(argv)
    started = time.monotonic()
    try:
        connection = _connection()
        image = _sandbox_image()
        truth = _seed(connection)
    except SetupError as exc:
        _say(f"set-up failed: {exc}")
        return 2
    _say(f"seeded the fixture memory graph into {connection.uri}; sandbox image {image}")
    print(header(connection, image, truth), flush=True)
    with tempfile.TemporaryDirectory(prefix="cgw-demo-") as tmp:
        workdir = args.workdir or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        demo = Demo(connection, image, truth, workdir, kept=args.workdir is not None)
        try:
            demo.run()
        except Exception as exc:  # a crashed session is a failed demo, reported as such
            _say(f"the scripted session failed: {type(exc).__name__}: {exc}")
            # Said in the report too: a session that never got to its steps must not read as "all ok".
            crashed = Step("A scripted session could not run", "-", "-", f"{type(exc).__name__}: {exc}", {})
            crashed.problem = "the session ended before its steps (server stderr below, on stderr)"
            demo.steps.append(crashed)
            for log in sorted(workdir.glob("server-stderr*.log")):
                _say(f"last lines of {log.name}:")
                for line in log.read_text(encoding="utf-8").splitlines()[-15:]:
                    _say(f"  {line}")
            print(render(demo.steps, time.monotonic() - started))
            return 1
        print(render(demo.steps, time.monotonic() - started))
    return 0 if all(step.ok for step in demo.steps) else 1


if __name__ == "__main__":
    sys.exit(main())
