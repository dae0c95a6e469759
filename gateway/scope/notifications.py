"""Which of Neo4j's notifications a scoped answer may carry: those the query text alone decides.

Neo4j computes notifications over the whole database, not over the caller's layers.
``UnknownLabelWarning`` (01N50), ``UnknownRelationshipTypeWarning`` (01N51) and
``UnknownPropertyKeyWarning`` (01N52) are sent only when no element at all carries the
name, so their absence says that a hidden element does; performance notes (03N9x) describe
the plan, which the planner chooses from statistics that count hidden elements too. A
notification passes only when it is on the list below, each entry with the reason it
depends on nothing but the text of the query. Everything else, and anything Neo4j adds
later, is dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from sandbox.wire import Notification

KEPT_GQL_STATUSES: Mapping[str, str] = {
    "01N00": "the query uses a deprecated feature",
    "01N01": "the query uses a deprecated feature that has a replacement",
    "01N02": "the query uses a deprecated feature that has no replacement",
    "01N61": "a relationship type expression in the query can never be satisfied (`[:A&B]`)",
    "01N63": "the query repeats a relationship variable in one pattern, so it matches nothing",
    "03N60": "a variable in a subquery shadows one of the outer query",
}
"""The notifications a scoped answer keeps, by GQL status, with why each depends on the query text alone."""

KEPT_CODES: frozenset[str] = frozenset(
    {
        "Neo.ClientNotification.Statement.FeatureDeprecationWarning",
        "Neo.ClientNotification.Statement.UnsatisfiableRelationshipTypeExpression",
        "Neo.ClientNotification.Statement.RepeatedRelationshipReference",
        "Neo.ClientNotification.Statement.SubqueryVariableShadowing",
    }
)
"""The same notifications by Neo4j code, for sources that send no GQL status (the Query API of 5.26)."""


def depends_on_query_text_only(notification: Notification) -> bool:
    """Whether ``notification`` is one the query text alone decides (its GQL status first, else its code)."""
    if notification.gql_status is not None:
        return notification.gql_status in KEPT_GQL_STATUSES
    return notification.code in KEPT_CODES


def kept_notifications(notifications: Iterable[Notification]) -> list[Notification]:
    """The notifications a scoped caller may see, in Neo4j's order."""
    return [n for n in notifications if depends_on_query_text_only(n)]
