"""This project's own events for its tests, and the change the upgrade tests make."""

from __future__ import annotations

import json
from datetime import UTC, datetime

BASE_MS = 1_795_341_600_000  # 2026-11-22T10:00:00Z, a multiple of the windows used here
MINUTE_MS = 60_000
# Version 2 of the pipeline: a metric the checkpoint cannot carry.
USERS = 'aggregation.metrics={"views": "count(*)", "users": "approx_count_distinct(user_id)"}'
# Sliding windows: a replay then holds events of windows the old generation wrote, which the
# replay filter must drop.
WINDOWS = [
    "window.duration=10 minutes",
    "window.slide=5 minutes",
    "window.watermark_delay=5 minutes",
]


def page_view(
    minute: int, article: str | None = None, user: str | None = None
) -> dict[str, object]:
    """One event ``minute`` minutes after BASE_MS; articles and users in turn by default."""
    moment = datetime.fromtimestamp((BASE_MS + minute * MINUTE_MS) / 1000, tz=UTC)
    return {
        "article_id": article or f"a{minute % 3}",
        "user_id": user or f"u{minute % 5}",
        "event_time": moment.isoformat().replace("+00:00", "Z"),
    }


def value(event: dict[str, object]) -> bytes:
    return json.dumps(event).encode()
