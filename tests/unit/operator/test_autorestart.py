"""The auto-restart back-off schedule (AbstractConnectOperatorAutoRestartTest's rules) on an injected clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sparklink.operator.model.autorestart import AutoRestartSpec, AutoRestartStatus, BackOff

T0 = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)
MINUTE = timedelta(seconds=2)


def test_intervals_are_n_squared_plus_n_capped_at_sixty() -> None:
    assert [BackOff.interval(n) for n in range(1, 11)] == [2, 6, 12, 20, 30, 42, 56, 60, 60, 60]


def test_first_restart_is_immediate_then_waits_whole_minutes_of_the_configured_unit() -> None:
    backoff = BackOff(MINUTE)
    assert backoff.should_restart(None, None, T0)
    after_one = AutoRestartStatus(1, T0)
    assert not backoff.should_restart(after_one, None, T0 + MINUTE * 2 - timedelta(milliseconds=1))
    assert backoff.should_restart(after_one, None, T0 + MINUTE * 2)
    after_three = AutoRestartStatus(3, T0)
    assert not backoff.should_restart(after_three, None, T0 + MINUTE * 11)
    assert backoff.should_restart(after_three, None, T0 + MINUTE * 12)


def test_max_restarts_stops_restarting() -> None:
    backoff = BackOff(MINUTE)
    assert not backoff.should_restart(AutoRestartStatus(3, T0), 3, T0 + MINUTE * 1000)
    assert backoff.should_restart(AutoRestartStatus(2, T0), 3, T0 + MINUTE * 6)


def test_reset_needs_strictly_more_than_one_interval_of_health() -> None:
    backoff = BackOff(MINUTE)
    status = AutoRestartStatus(2, T0)
    assert not backoff.should_reset(status, T0 + MINUTE * 6)
    assert not backoff.should_reset(status, T0 + MINUTE * 7 - timedelta(milliseconds=1))
    assert backoff.should_reset(status, T0 + MINUTE * 7)
    assert backoff.reset_due(status) == T0 + MINUTE * 7
    assert not backoff.should_reset(None, T0)


def test_status_round_trips_through_strimzi_json() -> None:
    status = BackOff.incremented(AutoRestartStatus(1, T0), T0 + MINUTE)
    assert status.count == 2
    raw = status.to_json()
    assert raw == {"count": 2, "lastRestartTimestamp": "2026-11-22T10:00:02.000Z"}
    assert AutoRestartStatus.from_json(raw) == status
    # Strimzi's own timestamps (nanoseconds) read back too
    assert (
        AutoRestartStatus.from_json({"count": 1, "lastRestartTimestamp": "2026-11-22T10:00:00.123456789Z"}) is not None
    )


def test_auto_restart_spec_present_means_enabled() -> None:
    assert AutoRestartSpec.from_json({}) == AutoRestartSpec(True, None)
    assert AutoRestartSpec.from_json({"enabled": False}) == AutoRestartSpec(False, None)
    assert AutoRestartSpec.from_json({"maxRestarts": 7}) == AutoRestartSpec(True, 7)
    assert AutoRestartSpec.from_json(None) is None
