"""The session cap's places (orsgen/runtime/sessions/cap.py): no server needed, real threads."""

from __future__ import annotations

import threading
import time

import pytest

from orsgen.runtime.sessions.cap import Places, SessionCapError


class Env:
    """Stands in for an adapter class: the places only count its live instances."""


def test_no_more_places_than_the_limit_and_a_release_frees_one() -> None:
    places = Places(Env)
    first, second = places.try_take(2), places.try_take(2)
    assert first is not None and second is not None
    assert places.try_take(2) is None
    first.release()
    first.release()  # idempotent: frees one place, not two
    assert sum(places.open_on().values()) == 1
    assert places.try_take(2) is not None
    assert places.try_take(2) is None


def test_no_limit_never_refuses() -> None:
    places = Places(Env)
    assert all(places.try_take(None) is not None for _ in range(50))


def test_take_waits_for_a_place_another_thread_releases() -> None:
    places = Places(Env)
    held = places.try_take(1)
    assert held is not None
    got: list[object] = []
    waiter = threading.Thread(target=lambda: got.append(places.take(1, time.monotonic() + 30)))
    waiter.start()
    waiter.join(timeout=0.3)
    assert waiter.is_alive() and got == []
    held.release()
    waiter.join(timeout=10)
    assert got and got[0] is not None


def test_take_gives_up_at_the_deadline() -> None:
    places = Places(Env)
    # A pool thread holds the only place: the main thread waits (someone else may free it).
    t = threading.Thread(target=places.try_take, args=(1,))
    t.start()
    t.join()
    assert sum(places.open_on().values()) == 1
    assert places.take(1, time.monotonic() + 0.2) is None


def test_the_main_thread_holding_every_place_itself_is_told_the_number_needed() -> None:
    places = Places(Env)
    instances = [Env() for _ in range(8)]
    for env in instances:
        places.adopt(env, 3)  # made with max_sessions=3
    others = [Env() for _ in range(20)]
    for env in others:
        places.adopt(env, 50)  # another factory's cap: not counted in the advice
    assert places.try_take(3) and places.try_take(3) and places.try_take(3)
    with pytest.raises(SessionCapError, match="max_sessions=3 .* at least 8"):
        places.take(3, time.monotonic() + 60)


def test_a_place_whose_session_is_closing_is_waited_for_not_reported() -> None:
    places = Places(Env)
    held = places.try_take(1)
    assert held is not None
    held.closing = True
    threading.Timer(0.2, held.release).start()
    assert places.take(1, time.monotonic() + 30) is not None


def test_a_pool_thread_waits_even_when_it_holds_every_place() -> None:
    places = Places(Env)
    out: list[object] = []

    def pool_thread() -> None:
        held = places.try_take(1)
        assert held is not None
        threading.Timer(0.2, held.release).start()
        out.append(places.take(1, time.monotonic() + 30))

    t = threading.Thread(target=pool_thread)
    t.start()
    t.join(timeout=30)
    assert out and out[0] is not None
