"""A request that narrows its principal's scope for itself.

An agent acting for one project in a session that may see several asks for that project
only: ``recall``/``analyze``/``check`` take an optional ``scope``, either a mapping from an
attribute the policy's rules read to a subset of the principal's list for it
(``{"repositories": ["acme/payments"]}``), or a plain list, which narrows ``layers`` (the
default attribute). The identity bounds the request, never the other way round: a value the
principal lacks is refused (rule ``scope.wider``), and an empty list narrows that attribute to
nothing, as an empty principal list does. A narrowing the policy cannot apply (an attribute no
rule reads, an empty mapping) is refused (rule ``scope.unappliable``): ignoring it would leave
the agent seeing more than it asked for, silently.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gateway import catalogue
from gateway.domain import DEFAULT_ATTRIBUTE, Principal
from gateway.errors import InvalidInput
from gateway.policy import Policy

# What a request's ``scope`` may be: the list form (``layers``) or one list per attribute.
RequestedScope = Sequence[str] | Mapping[str, Sequence[str]]


def requested_lists(requested: RequestedScope) -> dict[str, frozenset[str]]:
    """``requested`` as one set per attribute name; the list form is ``layers``.

    Raises ``InvalidInput`` for any other shape (a string, a list holding non-strings).
    """
    by_name = requested if isinstance(requested, Mapping) else {DEFAULT_ATTRIBUTE: requested}
    lists: dict[str, frozenset[str]] = {}
    for name, values in by_name.items():
        if (
            not isinstance(name, str)
            or isinstance(values, str)
            or not isinstance(values, Sequence)
            or not all(isinstance(v, str) for v in values)
        ):
            raise InvalidInput("scope must be a list of strings or a mapping from attribute names to lists of strings")
        lists[name] = frozenset(values)
    return lists


def narrowed(principal: Principal, requested: RequestedScope | None, policy: Policy) -> Principal:
    """``principal`` seeing only ``requested`` of its attribute lists; ``None`` leaves it as it is.

    Raises ``QueryRejected``: ``scope.unappliable`` when ``requested`` names an attribute that
    ``policy``'s rules do not read (or names none), ``scope.wider`` when it names a value outside
    the principal's own list. The answers name the caller's own words and the policy's
    attribute names, nothing of what the principal holds.
    """
    if requested is None:
        return principal
    lists = requested_lists(requested)
    readable = policy.scope_attributes()
    if not lists:
        raise catalogue.SCOPE_UNAPPLIABLE.rejected(
            "the request's scope names no attribute; omit `scope` for the whole scope"
        )
    for name in sorted(lists):
        if name not in readable:
            form = "a plain list narrows layers" if not isinstance(requested, Mapping) else f"{name[:80]!r}"
            raise catalogue.SCOPE_UNAPPLIABLE.rejected(
                f"the request narrows an attribute the policy {policy.name!r} does not read ({form}); "
                f"its rules read: {', '.join(readable) or 'none'} (write scope as {{attribute: [values]}})"
            )
    for name in sorted(lists):
        wider = sorted(lists[name] - principal.attribute(name))
        if wider:
            raise catalogue.SCOPE_WIDER.rejected(
                f"the request asks for {name} outside the caller's: {', '.join(map(repr, wider))}; "
                "a request may only narrow the scope it is given (omit `scope` for the whole of it)"
            )
    attributes = {**principal.attributes, **{n: v for n, v in lists.items() if n != DEFAULT_ATTRIBUTE}}
    return principal.model_copy(
        update={"scope": lists.get(DEFAULT_ATTRIBUTE, principal.scope), "attributes": attributes}
    )
