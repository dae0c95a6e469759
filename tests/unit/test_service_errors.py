"""A Neo4j runtime error must not carry a property value out past the scope: only the code survives."""

from __future__ import annotations

import pytest

from gateway.errors import Neo4jRefused
from gateway.scope import withheld_details


@pytest.mark.parametrize(
    ("message", "code"),
    [
        ('Text cannot be parsed to a Date\n"top-secret"', "Neo.ClientError.Statement.SyntaxError"),
        ("Unknown coordinate reference system: top-secret", "Neo.ClientError.Statement.ArgumentError"),
        ("Invalid value for MonthOfYear (valid values 1 - 12): 1337", "Neo.ClientError.Statement.ArgumentError"),
    ],
)
def test_only_the_code_survives(message: str, code: str) -> None:
    withheld = withheld_details(Neo4jRefused(message, code))
    assert "top-secret" not in withheld.message and "1337" not in withheld.message
    assert code in withheld.message
    assert withheld.neo4j_code == code
