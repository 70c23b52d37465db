"""bench.load's memory columns: RSS now and the peak since start, per process, in the report."""

from __future__ import annotations

import os
from typing import Any

from bench.load import to_markdown
from bench.loadgen import rss_kib


def test_the_peak_is_read_from_the_high_water_mark_and_is_never_below_now() -> None:
    now = rss_kib(os.getpid())
    assert 0 < now <= rss_kib(os.getpid(), "VmHWM")


def report(**extra: Any) -> dict[str, Any]:
    machine = {"git_revision": "abc1234", "cpus": 2, "loadavg": (0.1, 0.2, 0.3)}
    kib = {"retrieval": 700 * 1024}
    return {
        "name": "t",
        "command": "python -m bench.load",
        "machine_before": machine,
        "machine_after": machine,
        "runs": [],
        "rss_kib_started": kib,
        "rss_kib_warm": kib,
        "rss_kib_end": kib,
        "rss_growth_since_warm": {"retrieval": 0.0},
        "targets": {"zero_errors": True, "rss_growth_within_10_percent": True, "clean_exit": True},
        "exit_codes": {"retrieval": 0},
        **extra,
    }


def test_the_report_gives_each_process_its_peak() -> None:
    text = to_markdown(report(rss_kib_peak={"retrieval": 890 * 1024}))
    assert "| peak RSS (MiB) |" in text
    assert "| retrieval | 700 | 700 | 700 | +0.0% | 890 |" in text


def test_a_report_from_before_the_peak_column_still_renders() -> None:
    assert "| retrieval | 700 | 700 | 700 | +0.0% | – |" in to_markdown(report())
