"""BEGIN travels with the first RUN when the driver has the switch; without it, nothing else changes."""

from __future__ import annotations

import contextlib

import neo4j

from sandbox.bolt import _pipelined_begin


def test_the_driver_switch_pipelines_begin_only_inside_its_block() -> None:
    driver = neo4j.GraphDatabase.driver("bolt://127.0.0.1:9", auth=("neo4j", "x"))  # never dialled
    try:
        with driver.session() as session:
            switch = _pipelined_begin(session)
            assert not isinstance(switch, contextlib.nullcontext), "this driver has no pipelined-BEGIN switch"
            with switch:
                assert bool(session._pipelined_begin)
            assert not bool(session._pipelined_begin)
    finally:
        driver.close()


def test_a_driver_without_the_switch_begins_on_its_own_round_trip() -> None:
    assert isinstance(_pipelined_begin(object()), contextlib.nullcontext)  # type: ignore[arg-type]
