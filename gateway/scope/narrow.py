"""A request that narrows its principal's scope for itself.

An agent acting for one project in a session that may see several asks for that project
only: ``recall``/``analyze``/``check`` take an optional ``scope``, a subset of the
principal's layers. The identity bounds the request, never the other way round: a layer
the principal lacks is refused (rule ``scope.wider``), and an empty list means
global-only, as an empty principal scope does.
"""

from __future__ import annotations

from collections.abc import Sequence

from gateway import catalogue
from gateway.domain import Principal


def narrowed(principal: Principal, requested: Sequence[str] | None) -> Principal:
    """``principal`` seeing only ``requested`` of its layers; ``None`` leaves it as it is.

    Raises ``QueryRejected`` (``scope.wider``) when ``requested`` names a layer outside the
    principal's scope; the answer names those layers (the caller's own words) and nothing of
    what the principal holds.
    """
    if requested is None:
        return principal
    wanted = frozenset(requested)
    wider = sorted(wanted - principal.scope)
    if wider:
        raise catalogue.SCOPE_WIDER.rejected(
            f"the request asks for layers outside the caller's scope: {', '.join(map(repr, wider))}; "
            "a request may only narrow the scope it is given (omit `scope` for the whole of it)"
        )
    return principal.model_copy(update={"scope": wanted})
