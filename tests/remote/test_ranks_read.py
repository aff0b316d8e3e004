"""The Reader's ranks= option on local and remote (memory://) runs: rank k, all (a rank
column), mean/min/max per step; ranks told from file names of both dialects."""

from __future__ import annotations

import numpy as np
import pytest

import summarylog
from read_helpers import upload, write_run

from summarylog.read_ranks import by_rank, rank_of
from summarylog.reader import Reader


def _uneven(root: str) -> None:
    """rank 0 logs steps 0..9, rank 1 steps 0..14 (with step 3 twice), rank 2 steps 5..9."""
    for r, steps in ((0, range(10)), (1, list(range(15)) + [3]), (2, range(5, 10))):
        with summarylog.Writer(f"{root}/run", rank=r) as w:
            for s in steps:
                w.add_scalar("loss", 100.0 * r + s + (0.5 if (r, s) == (1, 3) and w else 0), s,
                             walltime=1000.0 + 10 * r + s)
            w.add_histogram("h", np.arange(3.0) + r, 0)


def _expect(how: str) -> tuple[list[int], list[float]]:
    per = {0: {s: float(s) for s in range(10)}, 1: {s: 100.0 + s for s in range(15)},
           2: {s: 200.0 + s for s in range(5, 10)}}
    per[1][3] = 100.5 + 3  # its last value of step 3
    steps = sorted({s for d in per.values() for s in d})
    f = {"mean": np.mean, "min": np.min, "max": np.max}[how]
    return steps, [float(f([d[s] for d in per.values() if s in d])) for s in steps]


@pytest.mark.parametrize("where", ["local", "memory"])
def test_ranks_modes(where, tmp_path) -> None:
    _uneven(str(tmp_path))
    path = str(tmp_path)
    if where == "memory":
        import fsspec

        fs = fsspec.filesystem("memory")
        upload(fs, str(tmp_path), f"/ranks-{id(tmp_path)}")
        path = f"memory://ranks-{id(tmp_path)}"
    r0 = Reader(path, ranks=0)
    assert r0.ranks_of("run") == [0, 1, 2]
    np.testing.assert_array_equal(r0.scalars("run", "loss").value, np.arange(10.0))
    r2 = Reader(path, ranks=2)
    np.testing.assert_array_equal(r2.scalars("run", "loss").step, np.arange(5, 10))
    assert len(r2.files("run")) == 1
    np.testing.assert_array_equal(r2.histograms("run", "h").stats[:, 1], [4.0])  # rank 2's own
    assert Reader(path, ranks=7).files("run") == []
    ra = Reader(path, ranks="all")
    s = ra.scalars("run", "loss")
    assert s.rank.tolist() == [0] * 10 + [1] * 16 + [2] * 5
    assert s.value[s.rank == 2].tolist() == [200.0 + i for i in range(5, 10)]
    frame = ra.to_pandas()
    assert list(frame.columns) == ["run", "tag", "step", "wall_time", "value", "rank"]
    assert frame["rank"].tolist() == s.rank.tolist()
    np.testing.assert_array_equal(ra.histograms("run", "h").stats[:, 1], [2.0])  # the lowest rank's
    for how in ("mean", "min", "max"):
        got = Reader(path, ranks=how).scalars("run", "loss")
        steps, values = _expect(how)
        assert got.step.tolist() == steps
        np.testing.assert_allclose(got.value, values)
    wall = Reader(path, ranks="max").scalars("run", "loss").wall_time
    assert wall[0] == 1010.0 and wall[7] == 1027.0  # the latest rank to log the step
    assert len(Reader(path, ranks="mean").damage("run")) == 3  # every rank's file reported
    print(f"\n{where}: ranks=0/2/all/mean/min/max over 3 uneven ranks (31 points) as logged")


def test_rank_names_and_bad_values(tmp_path) -> None:
    assert rank_of("events.out.tfevents.1700000000.host.123.4.2") == 2
    assert rank_of("events.out.tfevents.1700000000.host.123.4") == 0
    assert rank_of("events.out.tfevents.1700000000.my.host.123.4.3.v2") == 3
    assert rank_of("events.out.tfevents.1700000000.host.123.4.v2") == 0
    assert rank_of("events.out.zevents.1700000000.host.123.4.5.zst") == 5
    assert rank_of("x.out.events.summary.1700000000.6.host") == 6
    assert rank_of("x.out.events.summary.1700000000.host_lineage") == 0
    assert list(by_rank(["a.out.events.summary.1.1.h", "a.out.events.summary.1.0.h"])) == [0, 1]
    write_run(str(tmp_path), ranks=(0,))
    for bad, exc in ((-1, ValueError), ("sum", ValueError), (1.5, TypeError), (True, TypeError)):
        with pytest.raises(exc, match="ranks"):
            Reader(str(tmp_path), ranks=bad)
    # a run without ranks: every mode reads it as rank 0
    for how in (None, 0, "all", "mean"):
        assert len(Reader(str(tmp_path), ranks=how).scalars("run", "loss").step) == 50


def test_mindspore_ranks(tmp_path) -> None:
    from summarylog.summary_record import SummaryRecord

    for r in (0, 1):
        with SummaryRecord(str(tmp_path / "ms"), rank=r) if _has_rank() else _skip() as rec:
            for s in range(5):
                rec.add_value("scalar", "loss", np.float32(10 * r + s))
                rec.record(s)
    got = Reader(str(tmp_path), ranks="max").scalars("ms", "loss")
    assert got.value.tolist() == [10.0 + s for s in range(5)]


def _has_rank() -> bool:
    import inspect

    from summarylog.summary_record import SummaryRecord

    return "rank" in inspect.signature(SummaryRecord).parameters


def _skip():
    pytest.skip("SummaryRecord takes no rank= here")
