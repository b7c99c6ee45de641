"""Where the windows an old generation wrote end, and where the open ones begin.

Windows start at multiples of the slide (Spark's default, no start time). An event at time t
can reach a window still open at W exactly when the LATEST window containing it ends after
W; that holds for every t at or after T_min = (floor((W - size) / slide) + 1) * slide. For
tumbling windows that is floor(W / size) * size, the start of the window W falls in.
"""

from __future__ import annotations

from pyspark_kafka_upgrade._domain.values.validation import InvalidValueError, WindowSpec


def earliest_open_event_ms(watermark_ms: int, window: WindowSpec) -> int:
    """T_min: the smallest event time whose latest window ends after ``watermark_ms``.

    Every event at or after T_min has at least one window ending after W; every event before
    it has none. Floor division keeps this right for negative times.
    """
    size, slide = window.duration_ms, window.slide_ms
    if size <= 0 or slide <= 0 or slide > size:
        # With a slide longer than the window, an event can fall between windows, and the
        # latest window start would not contain it.
        raise InvalidValueError(
            f"window of {size} ms sliding every {slide} ms: both must be positive and the "
            "slide no longer than the window"
        )
    return ((watermark_ms - size) // slide + 1) * slide


def last_written_window_end_ms(watermark_ms: int, window: WindowSpec) -> int:
    """E: the end of the latest window the old generation wrote, the largest end <= W.

    When the window spec changes, the generations split in event time at E: every event
    before E lies in a written window (windows cover the whole time line when the slide is
    no longer than the window), and no written window holds an event at or after E. Windows
    end at ``k * slide + size``, which is a multiple of the slide only when the size is, so
    E is not simply the last slide boundary before W. T_min <= E, so a restart planned for
    T_min reads every event from E on.
    """
    earliest_open_event_ms(watermark_ms, window)  # the same checks on the window
    size, slide = window.duration_ms, window.slide_ms
    return (watermark_ms - size) // slide * slide + size
