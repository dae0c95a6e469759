"""The benchmark's own Neo4j: its neo4j.conf is the managed server's with a few settings replaced."""

from __future__ import annotations

from gateway.managed_neo4j import line_for
from gateway.ops.neo4j_local import _with_settings, render_conf


def _settings(conf: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in conf.splitlines():
        if line and not line.startswith("#"):
            key, value = line.split("=", 1)
            out.setdefault(key, []).append(value)
    return out


def test_memory_replaced_in_place_new_keys_appended_everything_else_kept() -> None:
    base = render_conf(listen="127.0.0.1", bolt=17787, http=None, line=line_for("5.26"))
    conf = _with_settings(
        base,
        {"server.memory.heap.max_size": "2g", "server.memory.pagecache.size": "1g", "db.tx_log.rotation.size": "1G"},
    )
    before, after = _settings(base), _settings(conf)
    # each key once (JVM flags apart: one line each), with the new value
    assert all(len(values) == 1 for key, values in after.items() if key != "server.jvm.additional")
    assert after["server.jvm.additional"] == before["server.jvm.additional"]
    assert after["server.memory.heap.max_size"] == ["2g"] and after["server.memory.pagecache.size"] == ["1g"]
    assert after["db.tx_log.rotation.size"] == ["1G"]
    untouched = set(before) - {"server.memory.heap.max_size", "server.memory.pagecache.size"}
    assert {k: after[k] for k in untouched} == {k: before[k] for k in untouched}
    assert after["server.bolt.listen_address"] == ["127.0.0.1:17787"]
    assert after["db.memory.transaction.max"] == before["db.memory.transaction.max"]  # limits stay the deployment's
    assert conf.startswith("# Written by cypher-gateway")
