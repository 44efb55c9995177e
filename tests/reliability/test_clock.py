"""`utc_now` and `iso`: now to the millisecond, in UTC, whether or not the last value is given
again within the same millisecond."""

from __future__ import annotations

import datetime as dt
import threading

from handrail._util import iso, now_iso, utc_now


def test_utc_now_is_now_to_the_millisecond_and_iso_is_its_text() -> None:
    for _ in range(2000):
        before = dt.datetime.now(dt.UTC)
        now = utc_now()
        after = dt.datetime.now(dt.UTC)
        assert before - dt.timedelta(milliseconds=1) < now <= after
        assert now.tzinfo is dt.UTC
        assert now.microsecond % 1000 == 0
        assert iso(now) == now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"
    other = dt.datetime(2026, 11, 30, 7, 8, 38, 123456, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    assert iso(other) == "2026-11-30T06:08:38.123Z"


def test_threads_asking_the_time_at_once_each_get_a_right_value() -> None:
    wrong: list[tuple[dt.datetime, dt.datetime]] = []

    def ask() -> None:
        for _ in range(5000):
            before = dt.datetime.now(dt.UTC)
            now = utc_now()
            text = iso(now)
            if not before - dt.timedelta(milliseconds=1) < now or text != iso(
                now.replace(tzinfo=dt.timezone(dt.timedelta(0)))
            ):
                wrong.append((before, now))

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert wrong == []


def test_iso_of_the_clock_is_isoformat_at_every_millisecond_and_second() -> None:
    # The clock's text is made from its second's text and the milliseconds: across second,
    # minute, day and year boundaries it is what `isoformat` says.
    from handrail import _util

    starts = [1_767_225_599_000, 1_764_630_000_000, 1_764_633_659_500]  # a new year among them
    for start in starts:
        for ms in range(start, start + 1500, 7):
            moment = _util._remember_now(ms)
            assert moment == dt.datetime.fromtimestamp(ms / 1000, dt.UTC)
            assert iso(moment) == moment.isoformat(timespec="milliseconds")[:-6] + "Z"
            assert iso(moment) == iso(moment.replace(tzinfo=dt.timezone(dt.timedelta(0))))


def test_now_iso_is_the_text_of_now() -> None:
    for _ in range(2000):
        before = iso(utc_now())
        text = now_iso()
        after = iso(utc_now())
        assert before <= text <= after
        assert len(text) == len("2026-11-30T07:08:38.123Z")
        assert text.endswith("Z")
    # Given again within a millisecond, or made anew: the text of the same moment.
    moment = utc_now()
    assert now_iso() >= iso(moment)
