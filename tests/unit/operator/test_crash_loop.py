"""The local host's memory of workers that exit on their own: the back-off between starts, one count per
exit, a settings change starting at once, and a status message that stays the same while nothing changes."""

from __future__ import annotations

from sparklink.operator.hosting.crash_loop import LONGEST_DELAY_S, CrashLoops
from sparklink.operator.model.resources import KAFKA_CONNECT, Key

KEY = Key(KAFKA_CONNECT, "ns", "connect")
TAIL = "ERROR the worker cannot use Kafka: SASL authentication failed"


def test_a_worker_that_keeps_exiting_is_started_at_once_then_after_a_doubling_back_off_up_to_a_minute() -> None:
    loops = CrashLoops()
    now, delays = 0.0, []
    for pid in range(100, 108):
        exit_ = loops.exited(KEY, 0, pid, "f1", TAIL, now)
        delays.append(exit_.delay_s)
        assert loops.may_start(KEY, 0, "f1", now) == (exit_.delay_s == 0)
        if exit_.delay_s:
            assert not loops.may_start(KEY, 0, "f1", now + exit_.delay_s - 0.1)
            assert loops.may_start(KEY, 0, "f1", now + exit_.delay_s)
        now += exit_.delay_s + 4.0  # the next worker runs 4 s before it exits
    assert delays == [0.0, 5.0, 10.0, 20.0, 40.0, LONGEST_DELAY_S, LONGEST_DELAY_S, LONGEST_DELAY_S]


def test_the_same_exit_noticed_by_several_reconciles_counts_once_and_its_message_does_not_change() -> None:
    loops = CrashLoops()
    first = loops.exited(KEY, 0, 100, "f1", TAIL, 0.0)
    again = loops.exited(KEY, 0, 100, "f1", "a later tail", 3.0)
    assert again == first and again.times == 1
    assert first.message(0) == loops.exited(KEY, 0, 100, "f1", TAIL, 9.0).message(0)
    assert first.message(0).startswith("worker 0 (pid 100) exited once; it is started again; its last log lines:")
    assert first.message(0).endswith(TAIL)
    second = loops.exited(KEY, 0, 101, "f1", TAIL, 10.0)
    assert second.message(0).startswith("worker 0 (pid 101) exited 2 times in a row; it is started again 5 s after")


def test_new_settings_start_at_once_and_count_from_one_and_forget_clears_a_replica_or_the_resource_only() -> None:
    loops = CrashLoops()
    other = Key(KAFKA_CONNECT, "ns", "other")
    loops.exited(KEY, 0, 100, "f1", TAIL, 0.0)
    loops.exited(KEY, 0, 101, "f1", TAIL, 5.0)
    loops.exited(other, 1, 200, "f1", TAIL, 5.0)
    assert not loops.may_start(KEY, 0, "f1", 6.0)
    assert loops.may_start(KEY, 0, "f2", 6.0)  # a fixed Secret, say: no waiting
    assert loops.exited(KEY, 0, 102, "f2", TAIL, 7.0).times == 1
    loops.exited(KEY, 1, 300, "f2", TAIL, 7.0)
    loops.forget(KEY, 0)  # the first worker answers: its count starts again, replica 1's goes on
    assert loops.last(KEY, 0) is None and loops.may_start(KEY, 0, "f2", 7.0)
    assert loops.last(KEY, 1) is not None
    loops.forget(KEY)
    assert loops.last(KEY, 1) is None
    last = loops.last(other, 1)
    assert last is not None and last.pid == 200
