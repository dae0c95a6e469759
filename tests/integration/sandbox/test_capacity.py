"""Capacity against the real Docker daemon and the real Neo4j: what happens past it, and what
sharing a container allows and never allows.

No timing is asserted here (bench/sandbox.py measures rates and latencies): these tests
show *which* answer comes — ``busy``, not a stall or an unsandboxed run; a principal's limit
that does not hold back another principal; containers bound to one principal; a reused
container emptied between two jobs; a forwarder that outlives many connections.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from gateway.audit import AuditLog
from gateway.domain import Principal
from gateway.errors import Busy
from gateway.policy import SandboxPolicy, load_policy
from gateway.runner import RunRecord, SandboxRunner
from gateway.runner.docker_io import sandbox_spec
from gateway.service import Gateway
from sandbox.wire import SOCKET_PATH, SandboxJob, SandboxResult
from tests.support.jobs import SettingsFactory, make_job
from tests.support.paths import ALL_PROPERTIES_POLICY_PATH
from tests.support.waiting import returns_within, wait_until

# A read Neo4j runs until the job's own timeout stops it: it holds its container meanwhile.
SLOW = "UNWIND range(1, 100000000) AS a UNWIND range(1, 100000000) AS b RETURN count(*) AS c"
ALICE = Principal(name="alice", scope=frozenset({"a"}))
BOB = Principal(name="bob", scope=frozenset({"b"}))
CAROL = Principal(name="carol")


def start(made: list[SandboxRunner], settings: Any, policy: SandboxPolicy, ready: int) -> SandboxRunner:
    runner = SandboxRunner(settings, policy)
    made.append(runner)
    assert runner.wait_ready(120, count=ready), runner.available()
    return runner


class Holding:
    """A slow query of ``principal`` running in a thread, holding its container until its timeout."""

    def __init__(self, runner: SandboxRunner, principal: Principal, timeout_seconds: float = 4.0) -> None:
        self.job = make_job(SLOW, timeout_seconds=timeout_seconds)
        self.result: SandboxResult | BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(runner, principal), daemon=True)
        self.thread.start()
        wait_until(lambda: self.job.query_id in {r.query_id for r in runner.records()}, timeout=60,
                   what="the slow query holding its container")  # fmt: skip

    def _run(self, runner: SandboxRunner, principal: Principal) -> None:
        try:
            self.result = runner.run(self.job, principal)
        except BaseException as exc:
            self.result = exc

    def finished(self) -> SandboxResult | BaseException | None:
        self.thread.join(60)
        assert not self.thread.is_alive(), "the slow query did not end"
        return self.result


def test_busy_when_every_container_is_taken_and_the_wait_ends(
    runner_settings: SettingsFactory, cleanup: list[SandboxRunner], tmp_path: Path
) -> None:
    # One container in all: while it runs one query, nothing else can be started.
    runner = start(cleanup, runner_settings(pool_size=1, max_containers=1), SandboxPolicy(busy_wait_ms=300), 1)
    audit = AuditLog(tmp_path / "audit.jsonl")
    gateway = Gateway(load_policy(ALL_PROPERTIES_POLICY_PATH), runner, audit)
    holding = Holding(runner, ALICE)
    with pytest.raises(Busy) as busy:
        returns_within(lambda: gateway.run("analyze", "RETURN 1 AS x", {}, BOB), timeout=60, what="a query at capacity")
    assert busy.value.code == "busy" and busy.value.retry_after_ms >= 100
    assert "nothing ran" in busy.value.message
    # Counted in the audit log like every other answer.
    (line,) = audit.read()
    assert (line["principal"], line["decision"], line["error_code"]) == ("bob", "error", "busy")
    # The slow query itself ran to its timeout, undisturbed.
    finished = holding.finished()
    assert isinstance(finished, SandboxResult) and finished.error is not None, finished
    assert finished.error.code == "timeout"
    # Capacity comes back: the same question is answered once a container is free again.
    assert runner.wait_ready(120, count=1)
    assert gateway.run("analyze", "RETURN 1 AS x", {}, BOB).rows == [[1]]


def test_the_wait_counts_from_the_requests_arrival(
    runner_settings: SettingsFactory, cleanup: list[SandboxRunner]
) -> None:
    # A request that spent the whole wait before reaching the pool (a slow guard on a loaded
    # host) is answered busy at once, not after a second full wait.
    runner = start(cleanup, runner_settings(pool_size=1, max_containers=1), SandboxPolicy(busy_wait_ms=10_000), 1)
    holding = Holding(runner, ALICE)
    arrived = time.monotonic() - 10
    with pytest.raises(Busy):
        returns_within(lambda: runner.run(make_job("RETURN 1 AS x"), BOB, arrived=arrived), timeout=5,
                       what="a query whose wait had already ended")  # fmt: skip
    assert isinstance(holding.finished(), SandboxResult)


def test_a_principal_over_its_limit_gets_busy_while_another_is_served(
    runner_settings: SettingsFactory, cleanup: list[SandboxRunner]
) -> None:
    policy = SandboxPolicy(max_concurrent_per_principal=1, busy_wait_ms=300)
    runner = start(cleanup, runner_settings(pool_size=2, max_containers=4), policy, 2)
    holding = Holding(runner, ALICE)
    with pytest.raises(Busy) as busy:
        runner.run(make_job("RETURN 1 AS x"), ALICE)
    assert "1 queries of this principal are already running" in busy.value.message
    served = runner.run(make_job("RETURN 2 AS x"), BOB)
    assert served.ok and served.rows == [[2]], served
    assert isinstance(holding.finished(), SandboxResult)
    # The limit is per principal and per running query: once Alice's query ended, she is served.
    assert runner.run(make_job("RETURN 3 AS x"), ALICE).rows == [[3]]


def _by_container(records: list[RunRecord]) -> dict[str, list[RunRecord]]:
    grouped: dict[str, list[RunRecord]] = defaultdict(list)
    for record in records:
        grouped[record.container_id].append(record)
    return grouped


def test_no_container_ever_serves_two_principals(
    runner_settings: SettingsFactory, cleanup: list[SandboxRunner]
) -> None:
    policy = SandboxPolicy(max_queries_per_container=5, busy_wait_ms=10_000)
    runner = start(cleanup, runner_settings(pool_size=2, max_containers=6), policy, 2)
    truncating = make_job("UNWIND range(1, 1000) AS i RETURN i")
    failing = make_job("RETURN 1 / 0 AS x")
    plan: dict[Principal, list[SandboxJob]] = {
        p: [make_job("RETURN $i AS i", params={"i": i}) for i in range(8)] for p in (ALICE, BOB, CAROL)
    }
    plan[ALICE].insert(4, truncating)
    plan[BOB].insert(3, failing)
    answers: dict[str, SandboxResult] = {}

    def agent(principal: Principal) -> None:
        for job in plan[principal]:
            answers[job.query_id] = runner.run(job, principal)

    threads = [threading.Thread(target=agent, args=(p,)) for p in plan]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    assert len(answers) == sum(len(jobs) for jobs in plan.values()), "every query was answered"
    assert answers[truncating.query_id].truncated and answers[failing.query_id].error is not None

    records = [r for r in runner.records() if r.query_id in answers]
    grouped = _by_container(records)
    for container, used in grouped.items():
        assert len({r.principal for r in used}) == 1, f"container {container[:12]} served {used}"
        assert len(used) <= policy.max_queries_per_container
        assert [r.use for r in used] == list(range(1, len(used) + 1))
    # Reuse did happen (the test could fail), and fewer containers than queries were needed.
    assert max(len(used) for used in grouped.values()) > 1 and len(grouped) < len(records)
    # A container that truncated or failed served nothing after that query.
    for job in (truncating, failing):
        (record,) = [r for r in records if r.query_id == job.query_id]
        assert grouped[record.container_id][-1] == record, f"{job.cypher!r}'s container was used again"


def test_a_static_principal_and_an_oauth_subject_of_one_name_never_share_a_container(
    runner_settings: SettingsFactory, cleanup: list[SandboxRunner]
) -> None:
    # The tokens file refuses the name (the prefix is reserved); the pool must not rely on that alone.
    static = Principal(name="oauth:alice", source="tokens", scope=frozenset({"a"}))
    subject = Principal(name="oauth:alice", source="oauth", scope=frozenset({"a"}))
    policy = SandboxPolicy(max_queries_per_container=10, idle_container_seconds=600, busy_wait_ms=10_000)
    runner = start(cleanup, runner_settings(pool_size=1, max_containers=4), policy, 1)
    pool = runner._pool
    assert pool is not None
    assert runner.run(make_job("RETURN 1 AS x"), static).ok
    kept = runner.records()[-1].container_id
    wait_until(lambda: kept in pool.idle_ids(static), timeout=60, what="the container kept for the static principal")
    assert pool.idle_ids(subject) == []
    for _ in range(2):
        assert runner.run(make_job("RETURN 1 AS x"), subject).ok
    assert runner.run(make_job("RETURN 1 AS x"), static).ok
    by_container: dict[str, set[tuple[str | None, str | None]]] = defaultdict(set)
    for record in runner.records():
        by_container[record.container_id].add((record.source, record.principal))
    assert by_container[kept] == {("tokens", "oauth:alice")}
    assert all(len(served) == 1 for served in by_container.values()), by_container
    # The static principal's container was reused (the test could fail), the subject got another.
    assert sum(1 for r in runner.records() if r.container_id == kept) == 2
    assert {("oauth", "oauth:alice")} in by_container.values()


# The prelude of the probes that look at the container's processes: each process's /proc file, skipping one
# that ended between the listing and the read (other probes' short-lived processes do), which would otherwise
# print a traceback into the output the probe is parsed from.
PROC_FILES = (
    "import os\n"
    "def proc_files(name):\n"
    "    for p in os.listdir('/proc'):\n"
    "        if not p.isdigit(): continue\n"
    "        try: text = open(f'/proc/{p}/{name}').read()\n"
    "        except OSError: continue\n"
    "        yield p, text\n"
)


def _exec(container: Any, code: str, detach: bool = False) -> str:
    result = container.exec_run(["python3", "-c", code], user="10001", detach=detach)
    return "" if detach else str(result.output.decode())


def _wait_kept(runner: SandboxRunner, container_id: str, what: str) -> None:
    pool = runner._pool
    assert pool is not None
    wait_until(lambda: container_id in pool.idle_ids(ALICE), timeout=60, what=what)


def _kept_container(
    runner_settings: SettingsFactory, cleanup: list[SandboxRunner], docker_client: Any, queries: int
) -> tuple[SandboxRunner, str, Any]:
    """A runner of one container that ran one job of ALICE's and is kept for her next ``queries - 1``."""
    policy = SandboxPolicy(max_queries_per_container=queries, idle_container_seconds=600)
    runner = start(cleanup, runner_settings(pool_size=1), policy, 1)
    assert runner.run(make_job("RETURN 1 AS x"), ALICE).ok
    first = runner.records()[-1].container_id
    _wait_kept(runner, first, "the container kept for its principal")
    return runner, first, docker_client.containers.get(first)


def test_a_reused_container_is_emptied_between_two_jobs(
    runner_settings: SettingsFactory, cleanup: list[SandboxRunner], docker_client: Any
) -> None:
    runner, first, container = _kept_container(runner_settings, cleanup, docker_client, queries=3)
    # What a compromised job could leave behind: a file in the scratch tmpfs and a running process.
    _exec(container, "open('/tmp/left-behind', 'w').write('x')")
    _exec(container, "import time; time.sleep(600)  # left-behind", detach=True)
    listing = "import os; print(sorted(os.listdir('/tmp')))"
    # (The marker is put together at run time, so the probe does not count its own command line.)
    processes = PROC_FILES + "marker = 'left' + '-behind'; print(sum(marker in c for _, c in proc_files('cmdline')))"
    wait_until(lambda: _exec(container, processes).strip() == "1", timeout=30, what="the left-behind process running")
    assert _exec(container, listing).strip() == "['left-behind']"

    assert runner.run(make_job("RETURN 2 AS x"), ALICE).rows == [[2]]
    assert runner.records()[-1].container_id == first, "the second job ran in the same container"
    _wait_kept(runner, first, "the container kept again")
    assert _exec(container, listing).strip() == "[]"
    assert _exec(container, processes).strip() == "0"


HOLD = r"""
import socket, sys, time
wanted, answered, held = int(sys.argv[1]), 0, []
for _ in range(wanted):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    try:
        s.connect(sys.argv[2])
        s.sendall(bytes.fromhex("6060b017" + "00000005" + "00" * 12))  # Bolt magic, then version 5
        answered += len(s.recv(4)) == 4
        held.append(s)
    except OSError:
        pass
print(answered, flush=True)
time.sleep(2)
"""


def test_the_forwarder_outlives_many_connections(sandbox_runner: SandboxRunner, docker_client: Any) -> None:
    # Each warm or running sandbox holds one connection; a fleet of them must not end the relay.
    connections = 100
    spec = sandbox_spec(
        sandbox_runner.settings, f"cgw-sock-{sandbox_runner.runner_id}", sandbox_runner.runner_id,
        runtime=str(sandbox_runner.runtime), max_jobs=1,
    )  # fmt: skip
    spec.update(entrypoint=["python3", "-c", HOLD, str(connections), SOCKET_PATH], stdin_open=False, detach=True,
                log_config={"Type": "json-file", "Config": {}})  # fmt: skip
    holder = docker_client.containers.run(**spec)
    try:
        assert holder.wait(timeout=120)["StatusCode"] == 0, holder.logs()
        answered = int(holder.logs(stdout=True, stderr=False).decode().split()[-1])
    finally:
        holder.remove(force=True)
    forwarder = docker_client.containers.get(sandbox_runner.forwarder_container_id())
    assert forwarder.status == "running" and sandbox_runner.forwarder_restarts == 0
    assert answered == connections, f"{answered} of {connections} connections got a Bolt version"
    assert sandbox_runner.run(make_job("RETURN 'still here' AS x")).rows == [["still here"]]


def test_cancel_kills_the_container_running_the_query(
    runner_settings: SettingsFactory, cleanup: list[SandboxRunner], docker_client: Any
) -> None:
    runner = start(cleanup, runner_settings(pool_size=1), SandboxPolicy(), 1)
    assert runner.cancel("no-such-query") is False
    holding = Holding(runner, ALICE, timeout_seconds=30.0)
    (record,) = [r for r in runner.records() if r.query_id == holding.job.query_id]
    assert runner.cancel(holding.job.query_id) is True
    finished = holding.finished()
    assert isinstance(finished, SandboxResult) and finished.error is not None, finished
    assert (finished.error.code, finished.error.message) == (
        "cancelled", "the query was cancelled by its caller; its sandbox was killed",
    )  # fmt: skip

    def removed() -> bool:
        # The low-level list inspects nothing, so other suites' containers coming and going cannot break it.
        return record.container_id not in {c["Id"] for c in docker_client.api.containers(all=True)}

    wait_until(removed, timeout=60, what="the cancelled query's container removed")


def test_a_lone_principal_calling_back_to_back_is_never_busy(
    runner_settings: SettingsFactory, cleanup: list[SandboxRunner]
) -> None:
    # The default policy's sharing, with one spare and room for two containers: a principal
    # that calls again the moment it is answered finds its own container still re-arming and
    # waits for it, instead of taking the spare (which then would have to be made again) or
    # being told "busy" by a gateway nobody else uses.
    policy = load_policy().sandbox
    assert policy.max_queries_per_container > 1, "the default policy reuses a principal's container"
    runner = start(cleanup, runner_settings(pool_size=1, max_containers=2), policy, 1)
    answers = [runner.run(make_job("RETURN $i AS i", params={"i": i}), ALICE) for i in range(30)]
    assert [a.rows for a in answers] == [[[i]] for i in range(30)]
    used = {r.container_id for r in runner.records() if r.principal == "alice"}
    assert len(used) == 1, f"30 sequential queries took {len(used)} containers"


def test_overload_by_many_principals_is_still_answered_busy(
    runner_settings: SettingsFactory, cleanup: list[SandboxRunner]
) -> None:
    # Waiting for one's own re-arming container is not a way past capacity: principals with
    # no container of their own, while every container is taken, get "busy".
    policy = load_policy().sandbox.model_copy(update={"busy_wait_ms": 300})
    runner = start(cleanup, runner_settings(pool_size=1, max_containers=1), policy, 1)
    holding = Holding(runner, ALICE)
    outcomes: list[str] = []

    def caller(name: str) -> None:
        try:
            runner.run(make_job("RETURN 1 AS x"), Principal(name=name))
            outcomes.append("ok")
        except Busy:
            outcomes.append("busy")

    threads = [threading.Thread(target=caller, args=(f"p{i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert outcomes == ["busy"] * 4
    assert isinstance(holding.finished(), SandboxResult)


def test_a_job_process_cannot_reach_into_the_first_process(
    runner_settings: SettingsFactory, cleanup: list[SandboxRunner], docker_client: Any
) -> None:
    # The first process holds the account and outlives every job: a job process of the same uid
    # must not read its memory or environment, nor trace it (it is made non-dumpable).
    runner = start(cleanup, runner_settings(pool_size=1), SandboxPolicy(max_queries_per_container=3), 1)
    (container_id,) = runner.pool_container_ids()
    container = docker_client.containers.get(container_id)
    probe = (
        "import ctypes, os\n"
        "for name in ('mem', 'environ', 'maps'):\n"
        "    try:\n"
        "        open(f'/proc/1/{name}', 'rb').read(16); print(name, 'read')\n"
        "    except OSError as exc: print(name, type(exc).__name__)\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "print('ptrace', libc.ptrace(16, 1, 0, 0), ctypes.get_errno() != 0)\n"  # PTRACE_ATTACH
    )
    lines = _exec(container, probe).split("\n")
    assert lines[:3] == ["mem PermissionError", "environ PermissionError", "maps PermissionError"], lines
    assert lines[3] == "ptrace -1 True", lines
    assert runner.run(make_job("RETURN 1 AS x"), ALICE).rows == [[1]]


def test_a_socket_left_listening_is_gone_before_the_next_job(
    runner_settings: SettingsFactory, cleanup: list[SandboxRunner], docker_client: Any
) -> None:
    runner, first, container = _kept_container(runner_settings, cleanup, docker_client, queries=3)
    # A compromised job could leave a listener on the loopback (TCP) and an abstract Unix socket,
    # waiting for the next job's process to talk to them.
    _exec(
        container,
        "import socket, time\n"
        "t = socket.socket(); t.bind(('127.0.0.1', 7687)); t.listen()\n"
        "u = socket.socket(socket.AF_UNIX); u.bind('\\0left-behind'); u.listen()\n"
        "time.sleep(600)\n",
        detach=True,
    )
    connect = (
        "import socket\n"
        "for family, address in ((socket.AF_INET, ('127.0.0.1', 7687)), (socket.AF_UNIX, '\\0left-behind')):\n"
        "    s = socket.socket(family)\n"
        "    try: s.connect(address); print('open')\n"
        "    except OSError: print('closed')\n"
    )
    wait_until(lambda: _exec(container, connect).split() == ["open", "open"], timeout=30, what="the listeners up")
    assert runner.run(make_job("RETURN 2 AS x"), ALICE).rows == [[2]]
    assert runner.records()[-1].container_id == first, "the second job ran in the same container"
    _wait_kept(runner, first, "the container kept again")
    assert _exec(container, connect).split() == ["closed", "closed"]


CHILDREN_OF_THE_FIRST = PROC_FILES + (
    "for p, stat in proc_files('stat'):\n"
    "    fields = stat.rsplit(')', 1)[-1].split()\n"
    # A process that ended between the listing and the read leaves an empty stat: skipped.
    "    if len(fields) > 19 and fields[1] == '1': print(p, fields[19])\n"  # ppid, start time
)


def test_the_next_job_process_is_armed_by_the_first_process_and_a_job_killing_it_costs_only_a_fork(
    runner_settings: SettingsFactory, cleanup: list[SandboxRunner], docker_client: Any
) -> None:
    runner, first, container = _kept_container(runner_settings, cleanup, docker_client, queries=4)
    slow = make_job("UNWIND range(1, 20000000) AS x WITH x WHERE x % 3 = 0 RETURN count(*) AS c", timeout_seconds=60)
    answers: list[SandboxResult] = []
    running = threading.Thread(target=lambda: answers.append(runner.run(slow, ALICE)), daemon=True)
    running.start()
    wait_until(lambda: slow.query_id in {r.query_id for r in runner.records()}, timeout=60, what="the slow job")

    def children() -> list[tuple[int, int]]:
        return [
            (int(p), int(t))
            for p, t in (line.split() for line in _exec(container, CHILDREN_OF_THE_FIRST).split("\n") if line)
        ]

    # While the job runs, the first process has forked the next job's process: two children, both its own.
    wait_until(lambda: len(children()) == 2, timeout=30, what="the running job process and the armed one")
    assert running.is_alive(), "the slow job ended before the armed process could be seen: make it slower"
    armed_pid = max(children(), key=lambda child: child[1])[0]
    # A compromised job (the same uid) kills the armed process: its own answer and the next one still come.
    _exec(container, f"import os, signal; os.kill({armed_pid}, signal.SIGKILL)")
    running.join(120)
    (answer,) = answers
    assert answer.ok and answer.rows == [[20000000 // 3]], answer.error
    assert runner.run(make_job("RETURN 3 AS x"), ALICE).rows == [[3]]
    assert runner.records()[-1].container_id == first, "the third job ran in the same container"
    assert armed_pid not in [pid for pid, _ in children()]
