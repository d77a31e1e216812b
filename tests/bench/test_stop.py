"""`python -m bench stop` on fast fakes: each tab's Stop is timed (a run that ended before its
Stop is an error, bench.stop.one_stop); the numbers are the benchmark's, nothing here is timed."""

from __future__ import annotations

import json

from bench import main
from bench.stop import TABS, run_stops


def test_each_tab_is_stopped_and_timed():
    report = run_stops(2, forward_ms=5)
    assert set(report["tabs"]) == set(TABS)
    for row in report["tabs"].values():
        assert len(row["stop_s"]) == 2 and all(v > 0 for v in row["stop_s"])
        assert row["median_s"] <= row["max_s"]


def test_the_cli_prints_json(capsys):
    assert main(["stop", "--trials", "1", "--forward-ms", "5", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["trials"] == 1 and set(report["tabs"]) == set(TABS)
