"""MindInsight 2.3.1 itself serves summarylog's loss landscapes as it serves MindSpore
2.10's own: the same /landscape/intervals and /landscape/landscapes answers for a run
holding MindSpore's landscape file (tests/data/ms210_landscape) and a run holding the
same landscapes written by summarylog.  And the two ways to get error 50545017 that
issue 24 met: asking without the interval id that /intervals hands out, and asking
before MindInsight has read the landscape file (a second file, written after the
training's, that it picks up only at its next reload)."""

from __future__ import annotations

import pathlib
import shutil
import time
from typing import Any

import pytest

import summarylog
from mindinsight_client import MindInsight
from summarylog.landscape import write_landscapes
from summarylog.reader import Reader
from venvs import require_venv

MS_RUN = pathlib.Path(__file__).resolve().parent.parent / "data" / "ms210_landscape"
TAGS = ["landscape_[1, 4]", "landscape_[5, 8]", "landscape_[8]"]
NOT_EXIST = "50545017"  # LandscapeNotExistError (MindInsight's utils/constant.py)


@pytest.fixture(scope="module")
def mi_venv() -> pathlib.Path:
    return require_venv("mindinsight")


def _without_train_id(answer: Any) -> Any:
    return [{k: v for k, v in item.items() if k != "train_id"} for item in answer["landscapes"]]


def _landscapes(mi: MindInsight, train_id: str, **params: Any) -> list[dict]:
    return mi.get("/datavisual/landscape/landscapes", train_id=train_id, **params)["landscapes"]


def test_mindinsight_serves_ours_as_mindspores(mi_venv: pathlib.Path, tmp_path: pathlib.Path):
    base = tmp_path / "base"
    (base / "theirs").mkdir(parents=True)
    for f in MS_RUN.iterdir():
        shutil.copy(f, base / "theirs" / f.name)
    theirs = Reader(str(MS_RUN)).landscapes(".")
    write_landscapes(base / "ours", [ls for [(_, ls)] in theirs.values()])
    with MindInsight(mi_venv, base, tmp_path / "ws") as mi:
        for run in ("./theirs", "./ours"):
            job = mi.wait_loaded(run, "loss_landscape", f"{TAGS[-1]}/loss_landscape")
            assert sorted(job["plugins"]["loss_landscape"]) == [f"{t}/loss_landscape"
                                                                for t in TAGS]
        intervals = {run: mi.get("/datavisual/landscape/intervals", train_id=run)
                     for run in ("./theirs", "./ours")}
        assert intervals["./theirs"] == intervals["./ours"]
        got = intervals["./ours"]["intervals"]
        assert [i["value"] for i in got] == [[1, 4], [5, 8]]
        # no interval_id (the route's default, the int 0, never equals an id): 50545017
        for run in ("./theirs", "./ours"):
            [answer] = _landscapes(mi, run)
            assert answer["error_code"] == NOT_EXIST, answer
        for item in got:
            both = mi.get("/datavisual/landscape/landscapes", train_id=["./theirs", "./ours"],
                          type="interval", interval_id=item["id"])
            a, b = _without_train_id(both)
            assert a == b and "error_code" not in a, (item, a)
            assert len(a["points"]["z"]) == 4 and len(a["path"]["intervals"]) == 4
            assert a["metadata"]["decomposition"] == "PCA"
        both = mi.get("/datavisual/landscape/landscapes", train_id=["./theirs", "./ours"],
                      type="final")
        a, b = _without_train_id(both)
        assert a == b and a["metadata"]["decomposition"] == "Random", a
        print(f"MindInsight 2.3.1: intervals {[i['value'] for i in got]} and the final "
              f"landscape answered alike for MindSpore's file and ours; without an "
              f"interval_id: {NOT_EXIST}")


def test_a_landscape_file_written_later_shows_after_a_reload(mi_venv: pathlib.Path,
                                                             tmp_path: pathlib.Path):
    """Training first, landscapes later (MindSpore's order): MindInsight caches the run
    with no landscape, so asking then gives 50545017; the new file is read at the next
    reload (reload interval 1 s here), then the landscape is served."""
    base = tmp_path / "base"
    with summarylog.SummaryRecord(str(base / "run")) as rec:
        rec.add_value("scalar", "loss", 1.0)
        rec.record(1)
    theirs = Reader(str(MS_RUN)).landscapes(".")
    with MindInsight(mi_venv, base, tmp_path / "ws", reload_interval=1) as mi:
        job = mi.wait_loaded("./run", "scalar", "loss/scalar")
        assert job["plugins"].get("loss_landscape", []) == []
        [answer] = _landscapes(mi, "./run", type="final")
        assert answer["error_code"] == NOT_EXIST
        time.sleep(1.1)  # a later file: MindInsight orders a run's files by their time stamp
        write_landscapes(base / "run", [theirs[TAGS[-1]][0][1]])
        t0 = time.monotonic()
        mi.wait_loaded("./run", "loss_landscape", f"{TAGS[-1]}/loss_landscape")
        seen = time.monotonic() - t0
        [answer] = _landscapes(mi, "./run", type="final")
        assert "error_code" not in answer and answer["metadata"]["decomposition"] == "Random"
        print(f"landscape file written after the run was cached: served {seen:.1f} s later "
              f"(reload interval 1 s); before that, {NOT_EXIST}")
