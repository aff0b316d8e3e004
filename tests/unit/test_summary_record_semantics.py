"""SummaryRecord's MindSpore semantics (issue 24, items 6, 9, 10, 11): a step
that can't be written is lost alone; ``train_network`` is checked;
MindSpore's summary operators are taken when MindSpore is loaded (faked
here; tests/integration/test_mindspore_summary_record.py runs the real
one); MindInsight's display limits are warned about once each."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
import timeit
import types

import numpy as np
import pytest

from summarylog import Reader, SummaryRecord, record_sinks
from summarylog.pb import ms
from summarylog.record_limits import DisplayLimits
from summarylog.record_sinks import StepWriteError
from summarylog.records import MAX_PAYLOAD


def _steps(d, tag):
    return Reader(d).scalars(".", tag).step.tolist()


def _errors(caplog):
    return [r.getMessage() for r in caplog.records
            if r.name == "summarylog" and r.levelno >= logging.ERROR]


# -- item 9: a step that fails to write loses that step only -------------------------------

def test_a_step_over_the_record_limit_is_lost_alone_and_recording_goes_on(
        tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(record_sinks, "MAX_RECORD", 64 << 10)  # 2 GiB - 1 without the memory
    with SummaryRecord(tmp_path) as rec:
        rec.add_value("scalar", "loss", 1.0)
        assert rec.record(1)
        rec.add_value("scalar", "loss", 2.0)
        rec.add_value("tensor", "big", np.ones(40_000, np.float32))  # 160 KB: over the cap
        rec.add_value("train_lineage", "t", {"hyper_parameters": {"epoch": 3}})
        assert rec.record(2)
        for step in range(3, 6):
            rec.add_value("scalar", "loss", float(step))
            assert rec.record(step)
        rec.flush()
        stats = rec.stats()
    assert _steps(tmp_path, "loss") == [1, 3, 4, 5]
    assert stats["lost_steps"] == 1
    (msg,) = _errors(caplog)
    assert "step 2" in msg and "summary event" in msg and str(64 << 10) in msg
    # the step's other record (its lineage) was still written
    assert Reader(tmp_path).lineage()[0]["epoch"] == 3
    print(f"step over a {64 << 10}-byte cap: lost alone; {stats['lost_steps']} lost, "
          f"steps 1, 3-5 read back")


def test_the_real_limit_goes_through_the_same_check(tmp_path, monkeypatch, caplog):
    assert record_sinks.MAX_RECORD == MAX_PAYLOAD == 2**31 - 1

    class Huge(bytes):  # a payload that says it is 2 GiB, without the memory
        def __len__(self):
            return 2**31

    from summarylog.dialects.mindspore import MindSporeEncoder

    real = MindSporeEncoder.summary

    def summary(self, wall, step, values):
        out = real(self, wall, step, values)
        return [Huge(out[0])] if step == 2 else out

    monkeypatch.setattr(MindSporeEncoder, "summary", summary)
    with SummaryRecord(tmp_path) as rec:
        for step in (1, 2, 3):
            rec.add_value("scalar", "loss", float(step))
            rec.record(step)
        rec.flush()
        assert rec.stats()["lost_steps"] == 1
    assert _steps(tmp_path, "loss") == [1, 3]
    (msg,) = _errors(caplog)
    assert f"2147483648 bytes, over the {2**31 - 1} bytes" in msg


def test_strict_record_raises_the_lost_step_then_goes_on(tmp_path, monkeypatch):
    monkeypatch.setattr(record_sinks, "MAX_RECORD", 64 << 10)
    rec = SummaryRecord(tmp_path, raise_exception=True)
    rec.add_value("tensor", "big", np.ones(40_000, np.float32))
    rec.record(1)
    with pytest.raises(StepWriteError, match="step 1") as info:
        rec.flush()
    assert isinstance(info.value, ValueError) and info.value.step == 1
    rec.add_value("scalar", "loss", 2.0)
    assert rec.record(2)  # not stopped
    rec.close()
    assert _steps(tmp_path, "loss") == [2]


@pytest.mark.parametrize("fmt", ["mindinsight", "tensorboard"])
def test_a_value_the_encoder_refuses_is_lost_alone(tmp_path, monkeypatch, caplog, fmt):
    import summarylog.dialects.mindspore as msd
    import summarylog.dialects.tensorboard as tbd

    real = msd.encode_png

    def encode_png(grid):
        if grid.max() == 7:  # the poisoned image
            raise ValueError("PNG encoder refuses this image")
        return real(grid)

    monkeypatch.setattr(msd, "encode_png", encode_png)
    monkeypatch.setattr(tbd, "encode_png", encode_png)
    with SummaryRecord(tmp_path, format=fmt) as rec:
        for step in (1, 2, 3):
            rec.add_value("scalar", "loss", float(step))
            rec.add_value("image", "img", np.full((1, 3, 2, 2), 7 if step == 2 else step,
                                                  np.uint8))
            assert rec.record(step)
        rec.flush()
        assert rec.stats()["lost_steps"] == 1
    r = Reader(tmp_path)
    assert r.scalars(".", "loss").step.tolist() == [1, 2, 3]  # the step's other values kept
    assert sorted({e.step for e in r.events(".") if e.tag == "img"}) == [1, 3]
    (msg,) = _errors(caplog)
    assert "step 2" in msg and "'img'" in msg and "refuses this image" in msg


def test_io_errors_still_stop_recording(tmp_path):
    """(unchanged: an I/O error is not a step's fault; see test_summary_record)"""
    from summarylog._native import lib

    rec = SummaryRecord(tmp_path)
    rec.add_value("scalar", "a", 1.0)
    rec.record(0)
    rec.flush()
    lib.slg_writer_inject_fault(rec._files.summary.current.handle, 28, 1000)  # ENOSPC
    rec.add_value("scalar", "a", 2.0)
    rec.record(1)
    rec.flush()
    assert rec.record(2) is False and rec.stats()["lost_steps"] == 0
    rec.close()


# -- item 10: train_network must be a network ----------------------------------------------

def test_train_network_that_is_not_a_network_raises_type_error(tmp_path):
    class CellLike:
        def get_func_graph_proto(self):
            return None

    with SummaryRecord(tmp_path) as rec:
        for bad in (3, "net", [1], object(), CellLike, {"graph": 1}):
            with pytest.raises(TypeError, match="'train_network'"):
                rec.record(1, train_network=bad)
        assert rec.record(1, train_network=None)
        assert rec.record(2, train_network=CellLike())
        assert rec.record(3, train_network=b"")
    with SummaryRecord(tmp_path / "g") as rec:
        g = ms.GraphProto(name="g")
        g.node.add(op_type="Add")
        rec.add_value("scalar", "a", 1.0)
        assert rec.record(1, train_network=g)
    assert [e.kind for e in Reader(tmp_path / "g").events(".")].count("graph") == 1


# -- item 6: MindSpore's summary operators (a fake MindSpore here) ----------------------------

class FakeMindSpore(types.ModuleType):
    """mindspore.train.summary.summary_record's two functions, over a cache
    that the "operators" fill (graph mode: the cache; PyNative: a list)."""

    def __init__(self) -> None:
        super().__init__("mindspore.train.summary.summary_record")
        self.cache: dict = {}
        self.pynative: list = []

    def _record_summary_tensor_data(self):
        for kind, tag, value in self.pynative:
            self.cache[f"{tag}[:{kind}]"] = value
        self.pynative = []

    def _get_summary_tensor_data(self):
        data, self.cache = self.cache, {}
        return data


@pytest.fixture
def fake_ms(monkeypatch):
    fake = FakeMindSpore()
    monkeypatch.setitem(sys.modules, fake.__name__, fake)
    return fake


def test_summary_operators_are_recorded_by_a_plain_record(tmp_path, fake_ms):
    fake_ms.cache["stale[:Scalar]"] = np.float32(9)  # before the record: dropped, as MindSpore
    with SummaryRecord(tmp_path) as rec:
        for step in (1, 2, 3):
            fake_ms.cache["loss[:Scalar]"] = np.float32(step)  # graph mode
            fake_ms.pynative.append(("Histogram", "w", np.arange(4.0) * step))  # PyNative
            fake_ms.cache["img[:Image]"] = np.zeros((1, 3, 2, 2), np.float32)
            fake_ms.cache["t[:Tensor]"] = np.ones((2, 2), np.float32) * step
            rec.record(step)
        rec.set_mode("eval")
        fake_ms.cache["loss[:Scalar]"] = np.float32(99)
        rec.record(4)  # eval: summary operators are not recorded
    r = Reader(tmp_path)
    assert r.scalars(".", "loss").value.tolist() == [1.0, 2.0, 3.0]
    assert r.tags(".") == {"loss": "scalar", "w": "histogram", "img": "image", "t": "tensor"}
    assert sorted({e.step for e in r.events(".") if e.tag == "t"}) == [1, 2, 3]
    assert fake_ms.cache == {"loss[:Scalar]": np.float32(99)}  # left for a train record


def test_no_double_recording_with_a_collectors_source(tmp_path, fake_ms):
    """The MindSpore collector registers its own source of the same cache
    (summarylog.adapters.mindspore._summary_ops): each value is recorded once."""
    def adapters_source():
        fake_ms._record_summary_tensor_data()
        return dict(fake_ms._get_summary_tensor_data())

    with SummaryRecord(tmp_path) as rec:
        rec.summary_op_sources.append(adapters_source)
        for step in (1, 2):
            fake_ms.cache["loss[:Scalar]"] = np.float32(step)
            rec.record(step)
    events = [e for e in Reader(tmp_path).events(".") if e.tag == "loss"]
    assert [(e.step, e.value) for e in events] == [(1, 1.0), (2, 2.0)]


def test_mindspore_is_never_imported_by_summary_record(tmp_path):
    code = textwrap.dedent(f"""
        import sys
        from summarylog import SummaryRecord
        with SummaryRecord({str(tmp_path)!r}) as rec:
            rec.add_value("scalar", "a", 1.0)
            rec.record(1)
        print(sorted(m for m in sys.modules if m.split(".")[0] == "mindspore"))
    """)
    r = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_taking_summary_operators_costs_nothing_measurable_without_mindspore(tmp_path,
                                                                             monkeypatch):
    import summarylog.record_ops as ops

    assert "mindspore.train.summary.summary_record" not in sys.modules
    with SummaryRecord(tmp_path, flush_secs=60) as rec:
        def one():
            rec.add_value("scalar", "loss", 0.5)
            rec.record(1)

        real = ops.mindspore_summary_ops
        times: dict[str, list[float]] = {"lookup": [], "stub": []}
        for _ in range(5):  # interleaved, so that warm-up favours neither
            for name, hook in (("stub", lambda: None), ("lookup", real)):
                monkeypatch.setattr(ops, "mindspore_summary_ops", hook)
                times[name].append(timeit.timeit(one, number=2000) / 2000 * 1e6)
        with_hook, without = min(times["lookup"]), min(times["stub"])
    lookup = min(timeit.repeat(real, number=100_000, repeat=5)) / 100_000 * 1e6
    print(f"add_value + record of a scalar: {with_hook:.2f} us with the MindSpore lookup, "
          f"{without:.2f} us with it stubbed out (MindSpore not loaded); the lookup alone "
          f"{lookup:.3f} us")


# -- item 11: MindInsight's display limits, warned once each -------------------------------

def _warnings(caplog):
    return [r.getMessage() for r in caplog.records
            if r.name == "summarylog" and r.levelno == logging.WARNING and "MindInsight" in
            r.getMessage()]


@pytest.mark.parametrize("plugin,limit,value", [
    ("scalar", 1000, 1.0),
    ("image", 10, np.zeros((1, 1, 2, 2), np.uint8)),
    ("histogram", 50, np.arange(3.0)),
    ("tensor", 20, np.arange(3.0)),
])
def test_steps_per_tag_past_mindinsights_reservoir_warn_once(tmp_path, caplog, plugin, limit,
                                                             value):
    with SummaryRecord(tmp_path) as rec:
        for step in range(limit):
            rec.add_value(plugin, "x", value)
            rec.record(step)
        rec.add_value(plugin, "x", value)
        rec.record(limit - 1)  # the same step again: still within the limit
        rec.flush()
        assert _warnings(caplog) == []
        for step in range(limit, limit + 5):
            rec.add_value(plugin, "x", value)
            rec.add_value(plugin, "y", value)
            rec.record(step)
    (msg,) = _warnings(caplog)
    assert f"more than {limit} steps" in msg and "'x'" in msg and plugin in msg


def test_more_than_300_tags_warn_once(tmp_path, caplog):
    with SummaryRecord(tmp_path) as rec:
        for i in range(300):
            rec.add_value("scalar", f"s{i}", 1.0)
        rec.record(1)
        rec.flush()
        assert _warnings(caplog) == []
        for i in range(300, 310):
            rec.add_value("scalar", f"s{i}", 1.0)
        rec.record(2)
    (msg,) = _warnings(caplog)
    assert "more than 300 tags" in msg and "'s300'/scalar" in msg


def test_more_than_6_tensor_tags_warn_once(tmp_path, caplog):
    with SummaryRecord(tmp_path) as rec:
        for i in range(6):
            rec.add_value("tensor", f"t{i}", np.ones(2))
        rec.record(1)
        rec.flush()
        assert _warnings(caplog) == []
        for i in range(6, 9):
            rec.add_value("tensor", f"t{i}", np.ones(2))
        rec.record(2)
    (msg,) = _warnings(caplog)
    assert "more than 6 tensor tags" in msg


def test_more_than_10_graphs_warn_once(tmp_path, caplog):
    g = ms.GraphProto(name="g")
    with SummaryRecord(tmp_path) as rec:
        for step in range(12):
            rec.add_value("graph", "", g)
            rec.record(step)
    (msg,) = _warnings(caplog)
    assert "more than 10 graphs" in msg


def test_tensor_over_mindinsights_size_warns_once(caplog):
    limits = DisplayLimits("run")
    big = types.SimpleNamespace(size=10_000_001)  # (the size is all that is looked at)
    limits.count(1, [("tensor", "t", types.SimpleNamespace(size=10_000_000))])
    assert _warnings(caplog) == []
    limits.count(2, [("tensor", "t", big)])
    limits.count(3, [("tensor", "t", big)])
    (msg,) = _warnings(caplog)
    assert "10000001 values" in msg


def test_tensorboard_format_does_not_warn_about_mindinsight(tmp_path, caplog):
    with SummaryRecord(tmp_path, format="tensorboard") as rec:
        for step in range(12):
            rec.add_value("image", "x", np.zeros((1, 1, 2, 2), np.uint8))
            rec.record(step)
    assert _warnings(caplog) == []


def test_counting_costs_a_dict_update_per_value():
    limits = DisplayLimits("run")
    values = [("scalar", f"s{i}", 1.0) for i in range(10)]
    n = 20_000
    t = min(timeit.repeat(lambda: limits.count(5, values), number=n, repeat=3))
    step = [0]

    def new_step():
        step[0] += 1
        limits.count(step[0], values)

    t2 = min(timeit.repeat(new_step, number=n, repeat=3))
    print(f"DisplayLimits.count of a 10-scalar step: {t / n * 1e6:.2f} us (same step), "
          f"{t2 / n * 1e6:.2f} us (new step), on the background thread")


def test_a_run_past_mindinsights_999_listed_runs_warns(tmp_path, caplog):
    base = tmp_path / "base"
    for i in range(998):
        (base / f"run{i}").mkdir(parents=True)
        (base / f"run{i}" / "events.out.events.summary.1.host_MS").write_bytes(b"")
    (base / "not_a_run").mkdir()  # no summary file: not counted
    SummaryRecord(base / "run998").close()  # the 999th run: listed
    assert _warnings(caplog) == []
    (base / "run998" / "events.out.events.summary.1.host_MS").write_bytes(b"")
    SummaryRecord(base / "run999").close()  # the 1000th: not listed
    (msg,) = _warnings(caplog)
    assert "lists at most 999" in msg and "run999" in msg
