from datetime import UTC, datetime

from gateway.ops.images import is_stale

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)


def test_an_image_built_today_by_another_checkout_is_kept() -> None:
    assert not is_stale("2026-12-03T11:59:00.123456789Z", NOW)


def test_an_image_older_than_the_retention_is_pruned() -> None:
    assert is_stale("2026-11-20T08:00:00.5Z", NOW)


def test_an_unreadable_date_is_never_pruned() -> None:
    assert not is_stale("yesterday", NOW)
