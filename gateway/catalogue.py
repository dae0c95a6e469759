"""Every rule id the gateway can answer with, in the order a request meets them.

A rule id is public and stable: it is the ``rule`` of a refused request
(``QueryRejected.rule``, ``CheckResult.rule``, the MCP error body), what a
must-not-retrieve case names in ``must_reject``, and what ``cypher-gateway
policy show`` prints with its sentence. Code that refuses a request takes the
rule from here (``catalogue.WRITE_CLAUSE.rejected(reason)``) and never spells
an id itself; tests/test_catalogue.py checks that, and that every rule here can
be produced.

Stages, in the order a request meets them: the request's shape (``request``),
reading the Cypher (``parse``), the static guard's rules (``guard``, listed with
their checks in ``gateway.guard.rules.RULES``), the scope rewrite (``scope``),
and Neo4j's own EXPLAIN inside the sandbox (``sandbox``).

Parameter names are part of the request's shape: a parameter map whose names
are not all non-empty strings is ``input.invalid``, checked once where a
request enters, before any rule runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from gateway.errors import QueryRejected

Stage = Literal["request", "parse", "guard", "scope", "sandbox"]


@dataclass(frozen=True)
class Rule:
    """One rule: its public ``id``, the ``sentence`` a reviewer reads, and the ``stage`` that applies it."""

    id: str
    sentence: str
    stage: Stage

    def rejected(self, reason: str) -> QueryRejected:
        """The caller-facing error for a request this rule refuses, ``reason`` saying why this one."""
        return QueryRejected(self.id, reason)


# --- the request's shape ---------------------------------------------------------------------
INPUT_INVALID = Rule(
    "input.invalid",
    "A request names a known tool and carries a non-empty query, and parameters as an object whose names "
    "are non-empty strings.",
    "request",
)
INPUT_PARAMS_TOO_LARGE = Rule(
    "input.params_too_large",
    "At most limits.max_param_keys parameters, each name at most limits.max_param_key_chars characters, and all of "
    "them at most limits.max_params_bytes bytes as JSON, on every transport.",
    "request",
)
TOOL_UNKNOWN = Rule("tool.unknown", "The guard decides only for the tools the policy defines.", "request")

# --- reading the Cypher ----------------------------------------------------------------------
INPUT_TOO_LARGE = Rule(
    "input.too_large", "A query longer than limits.max_query_chars is refused before it is read.", "parse"
)
INPUT_TOO_DEEP = Rule(
    "input.too_deep", "Brackets or expressions nested deeper than limits.max_nesting_depth are refused.", "parse"
)
PARSE_FAILED = Rule(
    "parse.failed", "A query the gateway's Cypher parser cannot read is refused (fail closed).", "parse"
)
CYPHER25_UNSUPPORTED = Rule(
    "cypher25.unsupported",
    "Cypher 25 that Neo4j reads but the gateway does not accept (SEARCH, GROUP BY, a query in braces, a parameter "
    "as a path count) is refused, naming the construct.",
    "parse",
)

# --- the static guard (gateway.guard.rules.RULES pairs each with its check) -------------------
STATEMENT_MULTIPLE = Rule("statement.multiple", "A request holds exactly one statement.", "guard")
QUERY_PREFIX = Rule(
    "query.prefix", "EXPLAIN and PROFILE prefixes are refused; the sandbox runs its own EXPLAIN.", "guard"
)
QUERY_OPTION = Rule(
    "query.option",
    "Only the Cypher versions the policy lists are accepted, and only the CYPHER options (planner, runtime) on its "
    "allow-list.",
    "guard",
)
ADMIN_COMMAND = Rule(
    "admin.command", "Schema, user, privilege, database and transaction commands are refused.", "guard"
)
DATABASE_USE = Rule("database.use", "USE is refused: every query runs against the configured database only.", "guard")
LOAD_CSV = Rule("load_csv", "LOAD CSV is refused in every form: it reads files and URLs.", "guard")
WRITE_CLAUSE = Rule(
    "write.clause",
    "Write clauses (CREATE, INSERT, MERGE, SET, REMOVE, DELETE, FOREACH) and CALL { … } IN TRANSACTIONS are "
    "refused anywhere, including subqueries and UNION branches.",
    "guard",
)
CLAUSE_NOT_ALLOWED = Rule("clause.not_allowed", "Only the clause kinds the tool's policy lists may appear.", "guard")
PROCEDURE_NOT_ALLOWED = Rule(
    "procedure.not_allowed", "Only procedures on the tool's allow-list may be called.", "guard"
)
FUNCTION_DENIED = Rule(
    "function.denied",
    "Functions matching the tool's deny-list (file, URL, dynamic Cypher, writes) are refused.",
    "guard",
)
FUNCTION_UNREVIEWED = Rule(
    "function.unreviewed",
    "Only functions with a reviewed cost model (gateway.guard.functions) may be called; any other, a new "
    "Neo4j release's or a plugin's, is refused until it is reviewed.",
    "guard",
)
PARAM_RESERVED = Rule(
    "param.reserved", "Reserved parameter keys can be neither supplied nor referenced by the caller.", "guard"
)
PARAM_REQUIRED = Rule(
    "param.required", "Parameters the tool requires must be referenced by the query and supplied.", "guard"
)
LABEL_DENIED = Rule("label.denied", "Labels the tool's policy denies may not appear.", "guard")
RELATIONSHIP_DENIED = Rule(
    "relationship.denied", "Relationship types the tool's policy denies (bookkeeping) may not appear.", "guard"
)
PROPERTY_HIDDEN = Rule(
    "property.hidden",
    "A property the policy hides (hidden_properties) may not be named anywhere: read, compared, sorted on, "
    "matched in a pattern or projected; while any is hidden, properties(), keys(), .* map projections, "
    "property_exists() and dynamic property access that the text and parameters do not resolve are refused.",
    "guard",
)
PROPERTY_NOT_VISIBLE = Rule(
    "property.not_visible",
    "Under visible_properties (the allow-list), a property key listed for no label, no relationship type and "
    "not in default may not be named anywhere (exact names); properties(), keys(), .* map projections, "
    "property_exists() and dynamic property access that the text and parameters do not resolve are refused.",
    "guard",
)
PATTERN_UNBOUNDED = Rule(
    "pattern.unbounded",
    "Variable-length patterns need an upper bound unless the policy allows unbounded ones.",
    "guard",
)
PATTERN_TOO_MANY_HOPS = Rule(
    "pattern.too_many_hops", "A variable-length pattern may traverse at most limits.max_hops relationships.", "guard"
)

# --- the static guard: what one evaluation of an expression may build and iterate (gateway.guard.size_walk)
# Neo4j interrupts neither an expression at its transaction timeout nor its memory tracker sees what
# an expression builds, so these are bounded before the query runs. "Data-sized": as long as a stored
# list, a collect() or a pattern comprehension; per element of it, limits.max_data_factor.
SIZE_RANGE = Rule(
    "size.range",
    "range() produces at most limits.max_range_length elements, with bounds known before the query runs "
    "(literals, parameters, arithmetic on them, size() of a list); bounds read from the data are refused.",
    "guard",
)
SIZE_ITERATIONS = Rule(
    "size.iterations",
    "One evaluation of an expression iterates at most limits.max_iterations times (comprehensions, reduce, "
    "quantifiers, IN, list comparisons element by element, string search at len(text) x len(needle) and "
    "string comparison, 64 characters to a step; multiplied along their nesting), at most "
    "limits.max_data_factor times per element of a data-sized list, and never a data-sized list inside an "
    "iteration over another.",
    "guard",
)
SIZE_ELEMENTS = Rule(
    "size.elements",
    "A value built by an expression holds at most limits.max_list_elements elements (nested lists and maps "
    "flattened, each list or map counting 8 besides its entries, shared references counted each time), at most "
    "limits.max_data_factor per element of a data-sized list (limits.max_data_chars inside collect(), which "
    "Neo4j's memory limit sees).",
    "guard",
)
SIZE_STRING = Rule(
    "size.string",
    "Strings built by an expression (concatenation, replace(), string.join(), reduce) hold at most "
    "limits.max_string_chars characters, at most limits.max_data_chars per element of a data-sized list.",
    "guard",
)
SIZE_OPERANDS = Rule(
    "size.operands",
    "One chain of AND / OR / XOR (brackets and NOT included) holds at most limits.max_boolean_operands operands: "
    "Neo4j analyses and rewrites it before its timeout applies.",
    "guard",
)
SIZE_ACCUMULATOR = Rule(
    "size.accumulator",
    "A reduce() whose accumulator grows at every step runs at most limits.max_accumulator_iterations steps, copies "
    "its accumulator at most limits.max_iterations steps' worth in all (steps x final size), and never over a "
    "data-sized list built by the query; one that doubles its accumulator is refused.",
    "guard",
)
REGEX_BACKTRACKING = Rule(
    "regex.backtracking",
    "A regular expression, wherever it stands (=~, an extended CASE's WHEN =~, string.regexReplace()), must be "
    "known before the query runs (a literal or parameter, never a value read from the data), with no repeated group "
    "that itself repeats or alternates and no back-reference, and at most limits.max_iterations backtracking "
    "steps over its subject.",
    "guard",
)

# --- the scope rewrite -----------------------------------------------------------------------
SCOPE_UNSUPPORTED = Rule(
    "scope.unsupported",
    "A query the scope rewrite cannot confine to the caller's layers is refused: procedure calls, "
    "functions off its list, shortestPath() as an expression, dynamic labels computed while a pattern is "
    "matched, names in the gateway's namespace, conditions that could fail on a hidden element, and any "
    "pattern that did not receive its visibility predicate.",
    "scope",
)
SCOPE_ELEMENT_ID = Rule(
    "scope.element_id",
    "id() and elementId() are refused under scope: Neo4j allocates ids across the whole database, so gaps "
    "between visible elements' ids count hidden elements and tell when they were created.",
    "scope",
)
SCOPE_TOO_LARGE = Rule(
    "scope.too_large",
    "A query whose scoped form would be longer than limits.max_rewritten_chars is refused before anything runs.",
    "scope",
)

SCOPE_WIDER = Rule(
    "scope.wider",
    "A request's own `scope` may only narrow the caller's: a value outside the principal's own list for that "
    "attribute (layers, repositories, …) is refused (an empty list narrows that attribute to nothing).",
    "scope",
)
SCOPE_UNAPPLIABLE = Rule(
    "scope.unappliable",
    "A request's own `scope` must narrow attributes the policy's rules read: a mapping naming another attribute, "
    "an empty mapping, or the plain list (which narrows `layers`) under a policy whose rules do not read `layers` "
    "is refused, never ignored.",
    "scope",
)

# --- inside the sandbox ----------------------------------------------------------------------
SANDBOX_EXPLAIN = Rule(
    "sandbox.explain",
    "Neo4j's own EXPLAIN, inside the sandbox, must plan a read-only query that calls only allow-listed procedures.",
    "sandbox",
)

SANDBOX_TOO_DEEP = Rule(
    "sandbox.too_deep",
    "Under hidden properties, an answer's nodes, relationships and paths leave Neo4j projected to the keys they "
    "may show, down to three levels of lists, maps or paths within a column; a value deeper than that which may "
    "hold one is refused rather than fetched (lists of plain values may nest to any depth).",
    "sandbox",
)

CATALOGUE: tuple[Rule, ...] = (
    INPUT_INVALID,
    INPUT_PARAMS_TOO_LARGE,
    TOOL_UNKNOWN,
    INPUT_TOO_LARGE,
    INPUT_TOO_DEEP,
    PARSE_FAILED,
    CYPHER25_UNSUPPORTED,
    STATEMENT_MULTIPLE,
    QUERY_PREFIX,
    QUERY_OPTION,
    ADMIN_COMMAND,
    DATABASE_USE,
    LOAD_CSV,
    WRITE_CLAUSE,
    CLAUSE_NOT_ALLOWED,
    PROCEDURE_NOT_ALLOWED,
    FUNCTION_DENIED,
    FUNCTION_UNREVIEWED,
    PARAM_RESERVED,
    PARAM_REQUIRED,
    LABEL_DENIED,
    RELATIONSHIP_DENIED,
    PROPERTY_HIDDEN,
    PROPERTY_NOT_VISIBLE,
    PATTERN_UNBOUNDED,
    PATTERN_TOO_MANY_HOPS,
    SIZE_RANGE,
    SIZE_ITERATIONS,
    SIZE_ELEMENTS,
    SIZE_STRING,
    SIZE_OPERANDS,
    SIZE_ACCUMULATOR,
    REGEX_BACKTRACKING,
    SCOPE_UNSUPPORTED,
    SCOPE_ELEMENT_ID,
    SCOPE_TOO_LARGE,
    SCOPE_WIDER,
    SCOPE_UNAPPLIABLE,
    SANDBOX_EXPLAIN,
    SANDBOX_TOO_DEEP,
)
"""Every rule, in the order a request meets them."""
