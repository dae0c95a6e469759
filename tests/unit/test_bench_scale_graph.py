"""The scale benchmark's graph generator: deterministic, exact in size, every rule kind's data present."""

from __future__ import annotations

import pytest

from bench.scale_graph import ENDS, PROJECTS, generate, parameters, project, repository

SIZE = 5_000


def test_same_seed_same_graph_other_seed_other_graph() -> None:
    first, again, other = generate(SIZE, seed=7), generate(SIZE, seed=7), generate(SIZE, seed=8)
    assert first.nodes == again.nodes and first.relationships == again.relationships
    assert first.nodes != other.nodes
    assert parameters(first) == parameters(again)


@pytest.mark.parametrize("size", [1_000, SIZE, 100_000])
def test_exactly_the_elements_asked_for_about_a_third_nodes(size: int) -> None:
    graph = generate(size, seed=1)
    assert graph.node_count() + graph.relationship_count() == size
    assert 0.28 < graph.node_count() / size < 0.38
    assert set(graph.relationships) == set(ENDS)


def test_too_small_is_refused() -> None:
    with pytest.raises(ValueError, match="1,000"):
        generate(999)


def test_relationships_join_existing_nodes_of_their_declared_labels() -> None:
    graph = generate(SIZE, seed=3)
    ids = {label: {row["id"] for row in rows} for label, rows in graph.nodes.items()}
    for rel_type, rels in graph.relationships.items():
        start, end = ENDS[rel_type]
        assert all(s in ids[start] and e in ids[end] for s, e, _ in rels), rel_type


def test_membership_data_on_every_element_with_globals_and_shared_layers() -> None:
    graph = generate(SIZE, seed=3)
    every_layers = [row["layers"] for rows in graph.nodes.values() for row in rows]
    every_layers += [props["layers"] for rels in graph.relationships.values() for _, _, props in rels]
    assert len(every_layers) == SIZE
    assert all(isinstance(layers, list) and all(isinstance(x, str) for x in layers) for layers in every_layers)
    assert any(layers == [] for layers in every_layers)  # global
    assert any(len(layers) == 2 for layers in every_layers)  # shared by two projects
    assert {x for layers in every_layers for x in layers} == {project(i) for i in range(PROJECTS)}


def test_equality_and_derived_rules_have_their_data() -> None:
    graph = generate(SIZE, seed=3)
    # equality: one repository per project, named
    assert sorted(r["name"] for r in graph.nodes["Repository"]) == [repository(i) for i in range(PROJECTS)]
    # derived: every task hangs from exactly one repository, every attempt from exactly one task
    assert sorted(e for _, e, _ in graph.relationships["HAS_TASK"]) == sorted(t["id"] for t in graph.nodes["Task"])
    assert sorted(e for _, e, _ in graph.relationships["HAS_ATTEMPT"]) == sorted(
        a["id"] for a in graph.nodes["Attempt"]
    )
    checks = {a.get("check") for a in graph.nodes["Attempt"]}
    assert checks == {"passed", "failed", None}  # no check = unverified
    assert graph.relationships["SUPERSEDES"] and graph.relationships["CONTRADICTS"]
    assert any("validTo" in f for f in graph.nodes["Fact"])


def test_parameters_name_elements_of_the_narrow_project() -> None:
    graph = generate(SIZE, seed=3)
    chosen = parameters(graph)
    entities = {e["id"]: e for e in graph.nodes["Entity"]}
    tasks = {t["id"]: t for t in graph.nodes["Task"]}
    assert chosen["repo"] == repository(0) and chosen["layer"] == project(0)
    assert tasks[chosen["task"]]["layers"] == [project(0)]
    assert ("r0", chosen["task"]) in {(s, e) for s, e, _ in graph.relationships["HAS_TASK"]}
    assert entities[chosen["entity"]]["layers"] == [project(0)] == entities[chosen["entity2"]]["layers"]
    assert chosen["entity"] != chosen["entity2"]
