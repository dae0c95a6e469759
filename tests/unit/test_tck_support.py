"""The TCK harness's own pieces, on text written here: its reading of the TCK's notation, of a
feature file, and its verdicts. The TCK run itself is tests/integration/tck/."""

from __future__ import annotations

import pytest

from tests.support import tck_values
from tests.support.tck import parse_feature, selection
from tests.support.tck_run import Answer, judge, judge_write
from tests.support.tck_values import from_json, parse

FEATURE = '''
Feature: Sample

  Scenario: A read in order
    Given an empty graph
    And having executed:
      """
      CREATE (:A {num: 1})
      """
    And parameters are:
      | p | 1 |
    When executing query:
      """
      MATCH (a:A) WHERE a.num = $p RETURN a
      """
    Then the result should be, in order:
      | a                 |
      | (:A {num: 1})     |
    And no side effects

  Scenario: A write
    Given an empty graph
    When executing query:
      """
      CREATE (:B)
      """
    Then the result should be empty
    And the side effects should be:
      | +nodes  | 1 |
      | +labels | 1 |

  Scenario Outline: An error
    Given any graph
    When executing query:
      """
      RETURN <expr>
      """
    Then a SyntaxError should be raised at compile time: <code>

    Examples:
      | expr | code            |
      | 1 +  | InvalidSyntax   |
      | foo( | InvalidSyntax   |
'''


def test_a_feature_file_gives_its_scenarios_with_graph_params_query_and_outcome() -> None:
    read, write, first_error, second_error = parse_feature(FEATURE, "clauses/Sample.feature")
    assert (read.name, read.kind, read.setup, read.params) == (
        "Sample A read in order",
        "read",
        ["CREATE (:A {num: 1})"],
        {"p": "1"},
    )
    assert read.query == "MATCH (a:A) WHERE a.num = $p RETURN a"
    assert read.expected is not None and read.expected.ordered
    assert read.expected.columns == ("a",) and read.expected.rows == (("(:A {num: 1})",),)
    assert write.kind == "write" and write.side_effects
    assert [first_error.name, second_error.name] == ["Sample An error #1", "Sample An error #2"]
    assert first_error.kind == "error" and first_error.query == "RETURN 1 +"
    assert first_error.error is not None and first_error.error.type == "SyntaxError"


def test_the_ci_selection_keeps_every_write_and_each_features_first_read() -> None:
    pool = parse_feature(FEATURE, "a/One.feature") + parse_feature(FEATURE, "b/Two.feature")
    chosen = [(s.feature, s.name) for s in selection(8, pool)]
    assert ("a/One.feature", "One A read in order") in chosen
    assert ("b/Two.feature", "Two A read in order") in chosen
    assert sum(1 for s in selection(8, pool) if s.kind == "write") == 2
    assert ("a/One.feature", "One An error #2") not in chosen  # the second error of its feature
    assert len(selection(1, pool)) == len(pool)


@pytest.mark.parametrize(
    ("cell", "json_value"),
    [
        ("1", 1),
        ("1.0", 1.0),
        ("-0.0", -0.0),
        ("'it\\'s'", "it's"),
        ("[1, 'a', null]", [1, "a", None]),
        ("{b: 2, a: [true]}", {"a": [True], "b": 2}),
        ("(:B:A {k: 1})", {"$type": "node", "labels": ["A", "B"], "properties": {"k": 1}, "elementId": "4:x:0"}),
        ("[:T {k: 'v'}]", {"$type": "relationship", "type": "T", "properties": {"k": "v"}}),
        ("'12:00'", {"$type": "localtime", "iso": "12:00:00"}),
        ("'12:31:14.645876123+01:00'", {"$type": "time", "iso": "12:31:14.645876123+01:00"}),
        ("'1984-10-11T12:31:14Z'", {"$type": "datetime", "iso": "1984-10-11T12:31:14+00:00", "zone": "UTC"}),
        (
            "'P1Y2M10DT12H45M30.25S'",
            {"$type": "duration", "months": 14, "days": 10, "seconds": 45930, "nanoseconds": 250000000},
        ),
        ("'PT-0.001S'", {"$type": "duration", "months": 0, "days": 0, "seconds": -1, "nanoseconds": 999000000}),
    ],
)
def test_a_tck_cell_and_the_sandbox_json_of_the_same_value_compare_equal(cell: str, json_value: object) -> None:
    assert parse(cell) == from_json(json_value)


@pytest.mark.parametrize(
    ("cell", "json_value"), [("1", 1.0), ("1", True), ("0.0", -0.0), ("'1'", 1), ("[1, 2]", [2, 1])]
)
def test_values_of_other_types_or_orders_stay_apart(cell: str, json_value: object) -> None:
    assert parse(cell) != from_json(json_value)


def test_a_path_compares_by_its_elements_and_directions() -> None:
    a = {"$type": "node", "labels": ["A"], "properties": {}, "elementId": "a"}
    b = {"$type": "node", "labels": ["B"], "properties": {}, "elementId": "b"}
    rel = {"$type": "relationship", "type": "T", "properties": {}, "startElementId": "b", "endElementId": "a"}
    path = {"$type": "path", "nodes": [a, b], "relationships": [rel]}
    assert from_json(path) == parse("<(:A)<-[:T]-(:B)>")
    assert from_json(path) != parse("<(:A)-[:T]->(:B)>")


def test_rows_compare_as_a_multiset_unless_in_order() -> None:
    one, two = [parse("1")], [parse("2")]
    assert tck_values.same_rows([one, two], [two, one], ordered=False, ignore_list_order=False)
    assert not tck_values.same_rows([one, two], [two, one], ordered=True, ignore_list_order=False)
    assert not tck_values.same_rows([one, one], [one], ordered=False, ignore_list_order=False)


def test_a_gateway_answer_other_than_neo4js_own_is_different() -> None:
    (read, *_) = parse_feature(FEATURE, "Sample.feature")
    node = parse("(:A {num: 1})")
    assert judge(read, Answer(columns=("a",), rows=((node,),)), lambda: Answer()).category == "equal"
    own = Answer(columns=("a",), rows=((parse("(:A {num: 2})"),),))
    assert judge(read, Answer(columns=("a",), rows=()), lambda: own).category == "different"
    assert judge(read, Answer(columns=("a",), rows=((own.rows[0][0],),)), lambda: own).category == "neo4j-differs"
    assert judge(read, Answer(rule="write.clause"), lambda: own).category == "refused"


def test_a_write_that_changed_the_graph_or_answered_is_a_bug_even_when_refused_later() -> None:
    (_, write, *_) = parse_feature(FEATURE, "Sample.feature")
    assert judge_write(write, Answer(rule="write.clause"), changed=False).category == "refused"
    assert judge_write(write, Answer(rule="write.clause"), changed=True).category == "wrote"
    assert judge_write(write, Answer(columns=("n",)), changed=False).category == "wrote"
