"""frames_forms: where a file's tags first hold plugin tensors (tbparse's order of tensor
tags); the Reader's events of tensor-form images and histograms keep the tensor as
written (tbparse files them as tensors); hostile paths answer "none" without hanging."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np

from summarylog import Reader
from summarylog.dialects.tensorboard import plugin_metadata, value_event
from summarylog.frames_forms import TensorForms, tensor_offsets
from summarylog.pb import tb
from summarylog.records import RecordWriter

_DT_STRING, _DT_DOUBLE = 7, 2
_PNG = b"\x89PNG\r\n\x1a\nnot really"


def _tensor_hist(k: int, lo: float, hi: float) -> np.ndarray:
    edges = np.linspace(lo, hi, k + 1)
    return np.stack([edges[:-1], edges[1:], np.arange(k, dtype=np.float64)], axis=1)


def _write(path: str, hist: np.ndarray) -> None:
    shape = {"dim": [{"size": s} for s in hist.shape]}
    with RecordWriter(path) as w:
        w.write(value_event(1.0, 0, tag="legacy_img", image=tb.Summary.Image(
            height=5, width=6, colorspace=3, encoded_image_string=_PNG)))
        w.write(value_event(1.0, 0, tag="tensor_img", metadata=plugin_metadata("images"),
                            tensor=tb.TensorProto(dtype=_DT_STRING,
                                                  tensor_shape={"dim": [{"size": 4}]},
                                                  string_val=[b"6", b"5", _PNG, _PNG])))
        w.write(value_event(1.0, 0, tag="legacy_hist", histo=tb.HistogramProto(
            min=0.0, max=1.0, num=1.0, bucket_limit=[1.0], bucket=[1.0])))
        w.write(value_event(1.0, 0, tag="tensor_hist", metadata=plugin_metadata("histograms"),
                            tensor=tb.TensorProto(dtype=_DT_DOUBLE, tensor_shape=shape,
                                                  tensor_content=hist.tobytes())))


def test_tensor_forms_and_tensors_as_written(tmp_path):
    hist = _tensor_hist(7, -1.5, 2.25)
    path = str(tmp_path / "events.out.tfevents.1.forms")
    _write(path, hist)
    tags = ["legacy_img", "tensor_img", "legacy_hist", "tensor_hist", "absent"]
    assert set(tensor_offsets(path, tags)) == {"tensor_img", "tensor_hist"}
    forms = TensorForms(path)
    # tensor tags in the file's order (tbparse's), the others after them as given
    assert forms.order(["absent", "tensor_hist", "legacy_img", "tensor_img"]) == [
        "tensor_img", "tensor_hist", "absent", "legacy_img"]
    r = Reader(path)
    events = {ev.tag: ev for ev in r.events(r.runs()[0])}
    assert "tensor" not in events["legacy_img"].value
    assert "tensor" not in events["legacy_hist"].value
    img = events["tensor_img"].value["tensor"]
    assert img.dtype == object and img.tolist() == [b"6", b"5", _PNG, _PNG]
    got = events["tensor_hist"].value["tensor"]
    assert got.dtype == np.float64 and got.shape == hist.shape
    np.testing.assert_array_equal(got, hist)
    print(f"tensor forms: 2 of {len(tags)} tags, a {hist.shape} histogram tensor as written")


def test_hostile_paths_answer_none_without_hanging(tmp_path):
    """A FIFO named like an event file (opening it blocking would hang), a directory, a
    dangling symlink, an empty file and a zstd-compressed file: no tags, no hang."""
    (tmp_path / "events.out.tfevents.0.empty").write_bytes(b"")
    (tmp_path / "events.out.tfevents.1.zst").write_bytes(b"\x28\xb5\x2f\xfd" + b"\x42" * 64)
    os.mkfifo(tmp_path / "events.out.tfevents.2.fifo")
    os.symlink(tmp_path / "nowhere", tmp_path / "events.out.tfevents.3.dangling")
    (tmp_path / "events.out.tfevents.4.dir").mkdir()
    code = textwrap.dedent(f"""
        import os
        from summarylog.frames_forms import tensor_offsets
        d = {str(tmp_path)!r}
        print(sum(len(tensor_offsets(os.path.join(d, n), ["x"])) for n in sorted(os.listdir(d))))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, env={**os.environ, "PYTHONSAFEPATH": "1"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["0"]
    print("tensor_offsets on a FIFO, a directory, a dangling link, an empty and a zstd "
          "file: no tags, no hang")
