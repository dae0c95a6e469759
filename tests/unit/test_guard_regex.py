"""Reading how a Java regular expression backtracks (the regex.backtracking rule's input)."""

from __future__ import annotations

import pytest

from gateway.guard import regex


@pytest.mark.parametrize(
    "pattern",
    ["(a+)+b", "(.*a){25}b", "(a|aa)*b", "(a|a)+", "((ab)*c)*", "(?:x+y?)+z", "(a)\\1", "(?<n>a)\\k<n>", "(a*)*"],
)
def test_exponential_backtracking_is_found(pattern: str) -> None:
    assert regex.read(pattern).exponential is not None


@pytest.mark.parametrize(
    "pattern, quantifiers",
    [
        ("abc", 0),
        ("task-[0-9]{4}", 0),  # an exact count gives nothing back
        ("(?i).*foo.*", 1),  # the trailing .* has nothing after it to retry
        ("^[a-z]+-[0-9]{1,4}$", 1),
        (".*a.*b.*c", 3),
        ("a?a?a?aaa", 3),
        ("[(*+]+x", 1),  # brackets and quantifier characters inside a class are literals
        ("\\(a*\\)b", 1),
        ("\\Q(a+)+\\E", 0),  # quoted: literal text
        ("(ab){3}", 0),
        ("x{2,}y", 1),
        ("[a-z&&[^b]]*q", 1),
        ("[]a]*q", 1),
        ("a{,3}", 0),  # not a quantifier in Java: literal braces
    ],
)
def test_free_quantifiers_are_counted(pattern: str, quantifiers: int) -> None:
    found = regex.read(pattern)
    assert found.exponential is None
    assert found.quantifiers == quantifiers


@pytest.mark.parametrize("pattern", ["(?x) a+ # (", "(a", "a)", "[abc", "*a", "a\\", "(?<name", "(?%)"])
def test_what_the_reader_does_not_follow_is_unreadable(pattern: str) -> None:
    with pytest.raises(regex.RegexUnreadable):
        regex.read(pattern)
