"""bench races: each side's model time per race comes back from the stored comparison, with its
median and spread, and the 1.5x verdict follows the numbers."""

import pytest

from bench.races import run_races, table
from tests.fakes import FakeARBackend, FakeDiffusionBackend


def test_each_race_is_read_back_from_its_stored_row():
    backends = {"fake-bd": FakeDiffusionBackend("Hello there.", name="fake-bd"),
                "fake-ar": FakeARBackend("Hi there.", name="fake-ar")}
    report = run_races(3, "Say hi", "fake-bd", "fake-ar", preloaded=backends)
    assert report["races"] == 3 and set(report["sides"]) == {"fake-bd", "fake-ar"}
    for side in report["sides"].values():
        values = side["model_s"]
        assert len(values) == 3 and all(v > 0 for v in values)
        assert side["max_over_median"] >= 1.0 and side["median_over_min"] >= 1.0
        # the shown ratios follow the shown seconds, and the verdict follows the shown ratios (a test
        # that worked the verdict out again from rounded seconds disagreed with it at a spread of 1.4999)
        assert side["max_over_median"] == pytest.approx(max(values) / side["median_s"], rel=1e-2)
        assert side["median_over_min"] == pytest.approx(side["median_s"] / min(values), rel=1e-2)
        assert side["within_target"] == (max(side["max_over_median"], side["median_over_min"]) <= 1.5)
    assert "median" in table(report) and len(report["wall_s"]) == 3


def test_one_race_is_refused_with_a_sentence():
    with pytest.raises(ValueError, match="at least 2"):
        run_races(1, "Say hi", "fake-bd", "fake-ar", preloaded={})
