"""Loss landscapes written, shown and read back (issue 24 item 3): SummaryRecord takes
them (a Landscape or MindSpore's LossLandscape, 'LANDSCAPE' or MindSpore's 'landscape');
the MindSpore dialect writes MindSpore 2.10's bytes; the TensorBoard dialect writes the
exact message, a mesh and a contour image; Reader.landscapes returns Landscape objects
from either dialect and from MindSpore's own file; damaged values are reported."""

from __future__ import annotations

import json
import os
import pathlib
import time
import tracemalloc

import numpy as np
import pytest

import summarylog
from summarylog.dialects import tb_landscape
from summarylog.dialects.landscape_png import (END_COLOR, NAN_COLOR, PATH_COLOR, START_COLOR,
                                               contour_image)
from summarylog.landscape import Landscape, write_landscapes
from summarylog.pb import len_field, ms, tb
from summarylog.reader import Reader
from summarylog.records import RecordReader, RecordWriter
from summarylog.record_values import LANDSCAPE, canonical_plugin, pool_item

MS_RUN = pathlib.Path(__file__).resolve().parent.parent / "data" / "ms210_landscape"
MS_FILE = MS_RUN / "events.out.events.summary.1795714728.0.vm_MS"
MS_TAGS = ["landscape_[1, 4]", "landscape_[5, 8]", "landscape_[8]"]


def pca(tag: str = "landscape_[1, 4]", n: int = 5, t: int = 4) -> Landscape:
    x = np.linspace(-1.0, 1.5, n)
    y = np.linspace(-0.5, 0.75, n + 1)
    z = np.log1p(x[None, :] ** 2 + 3 * y[:, None] ** 2)
    s = np.linspace(1.0, 0.0, t)
    return Landscape(tag, x, y, z, intervals=list(range(1, t + 1)), path_x=s, path_y=0.5 * s,
                     path_z=s ** 2, convergence_point=(0.0, 0.0, 0.0), unit="step",
                     step_per_epoch=12)


def final(tag: str = "landscape_[4]", n: int = 4) -> Landscape:
    x = np.linspace(-1.0, 1.0, n)
    return Landscape(tag, x, x, np.add.outer(x, x) ** 2, decomposition="Random",
                     convergence_point=(x[n // 2], x[n // 2], 0.0))


def as_stored(ls: Landscape) -> Landscape:
    """What any file holds of ``ls``: MindSpore's message (float32 values)."""
    return Landscape.from_message(ls.tag, ls.to_message())


def same(a: Landscape, b: Landscape) -> bool:
    def eq(p, q):
        return (p is None and q is None) or (p is not None and q is not None
                                             and np.array_equal(p, q, equal_nan=True))
    return (a.tag == b.tag and eq(a.x, b.x) and eq(a.y, b.y) and eq(a.z, b.z)
            and eq(a.path_x, b.path_x) and eq(a.path_y, b.path_y) and eq(a.path_z, b.path_z)
            and a.intervals == b.intervals and a.decomposition == b.decomposition
            and a.unit == b.unit and a.step_per_epoch == b.step_per_epoch
            and a.convergence_point == b.convergence_point)


def records(path: str | os.PathLike[str]) -> list[bytes]:
    with RecordReader(os.fspath(path)) as rr:
        return [bytes(r) for r in rr]


# ---- SummaryRecord takes landscapes ----------------------------------------------------

def test_both_spellings_name_one_plugin():
    assert canonical_plugin("landscape") == canonical_plugin("LANDSCAPE") == LANDSCAPE
    assert canonical_plugin("scalar") == "scalar" and canonical_plugin(3) == 3
    # pool_item takes the canonical name only: another spelling would be pooled where
    # no sink looks, so it is refused rather than dropped
    with pytest.raises(ValueError, match="No such plugin"):
        pool_item("landscape", "t", final(), False)
    msg = pool_item(canonical_plugin("landscape"), "t", final(), False)
    assert msg.SerializeToString() == final().to_message().SerializeToString()


@pytest.mark.parametrize("fmt", ["mindinsight", "tensorboard"])
@pytest.mark.parametrize("form", ["Landscape", "message", "bytes", "MindSpore-JSON"])
def test_add_value_takes_a_landscape_in_every_form(tmp_path, fmt, form):
    from google.protobuf import json_format

    ls = pca()
    value = {"Landscape": ls, "message": ls.to_message(),
             "bytes": ls.to_message().SerializeToString(),
             "MindSpore-JSON": json_format.MessageToDict(ls.to_message())}[form]
    with summarylog.SummaryRecord(str(tmp_path), format=fmt) as rec:
        rec.add_value("LANDSCAPE", ls.tag, value)
        rec.record(3)
    got = Reader(str(tmp_path)).landscapes(".")
    assert list(got) == [ls.tag] and got[ls.tag][0][0] == 3
    assert same(got[ls.tag][0][1], as_stored(ls))


@pytest.mark.parametrize("fmt", ["mindinsight", "tensorboard"])
def test_mindspore_spelling_is_recorded(tmp_path, fmt):
    with summarylog.SummaryRecord(str(tmp_path), format=fmt) as rec:
        rec.add_value("landscape", "lower", final("lower"))
        rec.add_value("LANDSCAPE", "upper", final("upper"))
        rec.record(0)
    assert sorted(Reader(str(tmp_path)).landscapes(".")) == ["lower", "upper"]


@pytest.mark.parametrize("bad, match", [
    (ms.LossLandscape(), "not a loss landscape"),
    ({"landscape": {"x": {"dims": [2], "floatData": [0, 1]},
                    "y": {"dims": [2], "floatData": [0, 1]},
                    "z": {"dims": [3], "floatData": [1, 2, 3]}}}, "not a loss landscape"),
    (b"\xff\xff\xff", "not a loss landscape"),
    (3.5, "LossLandscape"),
    (ms.Value(tag="x"), "LossLandscape"),
])
def test_a_value_that_is_no_landscape_is_refused_at_add_value(tmp_path, bad, match):
    from google.protobuf.message import DecodeError

    with summarylog.SummaryRecord(str(tmp_path)) as rec:
        with pytest.raises((TypeError, ValueError, DecodeError), match=match):
            rec.add_value("LANDSCAPE", "ls", bad)


# ---- the MindSpore dialect is MindSpore's bytes -----------------------------------------

def test_mindspore_own_file_reads_as_landscapes():
    got = Reader(str(MS_RUN)).landscapes(".")
    assert list(got) == MS_TAGS
    for tag, [(step, ls)] in got.items():
        assert step == 0 and ls.z.shape == (4, 4)
        assert np.all(np.diff(ls.x) > 0) and np.all(np.diff(ls.y) > 0)
        assert np.isfinite(ls.z).all()
    a, b, r = (got[t][0][1] for t in MS_TAGS)
    assert (a.intervals, b.intervals, r.intervals) == ([1, 2, 3, 4], [5, 6, 7, 8], [])
    assert (a.decomposition, r.decomposition) == ("PCA", "Random")
    assert a.path_x.size == 4 and a.path_x[-1] == 0 and a.path_y[-1] == 0
    assert np.array_equal(r.x, np.linspace(-1, 1, 4).astype(np.float32))
    # a PCA landscape converges at the origin, at the path's last loss
    assert a.convergence_point == (0.0, 0.0, a.path_z[-1])
    print(f"MindSpore 2.10's file: {', '.join(MS_TAGS)}; {a.decomposition} loss "
          f"{a.z.min():.4g}..{a.z.max():.4g}")


def test_mindspore_dialect_writes_mindspores_bytes(tmp_path):
    """The same landscapes through write_landscapes: every record byte for byte as
    MindSpore 2.10 wrote them but the wall time (the header's version record too)."""
    theirs = records(MS_FILE)
    values = [v for r in theirs[1:] for v in ms.Event.FromString(r).summary.value]
    landscapes = [Landscape.from_message(v.tag, v.loss_landscape) for v in values]
    for v, ls in zip(values, landscapes):  # the message alone, through our Landscape
        assert ls.to_message().SerializeToString() == v.loss_landscape.SerializeToString()
    write_landscapes(tmp_path, landscapes)
    [ours_file] = [p for p in tmp_path.iterdir() if p.name.endswith("_MS")]
    ours = records(ours_file)
    assert len(ours) == len(theirs) == 4
    for a, b in zip(ours, theirs):  # field 1 (wall_time) is the first 9 bytes of each
        assert a[:1] == b[:1] == b"\x09" and a[9:] == b[9:]
    print(f"{len(ours)} records ({sum(map(len, ours))} bytes) equal to MindSpore's but the "
          f"wall time")


def test_convert_carries_landscapes_across_dialects(tmp_path):
    from summarylog.convert import convert

    convert(str(MS_RUN), str(tmp_path / "tb"), "tensorboard")
    convert(str(tmp_path / "tb"), str(tmp_path / "back"), "mindinsight")
    want = Reader(str(MS_RUN)).landscapes(".")
    for d in ("tb", "back"):
        got = Reader(str(tmp_path / d)).landscapes(".")
        assert list(got) == MS_TAGS, d
        for tag in MS_TAGS:
            assert same(got[tag][0][1], want[tag][0][1]), (d, tag)


# ---- the TensorBoard dialect: exact value, mesh, contour image ---------------------------

def test_tensorboard_values_of_a_landscape(tmp_path):
    ls = pca(n=6)
    with summarylog.SummaryRecord(str(tmp_path), format="tensorboard") as rec:
        rec.add_value("LANDSCAPE", ls.tag, ls)
        rec.record(0)
    r = Reader(str(tmp_path))
    kinds = r.tags(".")
    assert kinds == {ls.tag: "landscape", f"{ls.tag}/contour": "image",
                     f"{ls.tag}_VERTEX": "tensor", f"{ls.tag}_FACE": "tensor",
                     f"{ls.tag}_COLOR": "tensor"}
    [payload] = [p for p in records(next(tmp_path.iterdir()))[1:]]
    ev = tb.Event.FromString(payload)
    by_tag = {v.tag: v for v in ev.summary.value}
    exact = by_tag[ls.tag]
    assert exact.metadata.plugin_data.plugin_name == "loss_landscape"
    assert exact.tensor.string_val[0] == ls.to_message().SerializeToString()
    n_vert = 6 * 7 + 3 * 4
    for kind, dtype, shape in (("VERTEX", 1, [1, n_vert, 3]), ("FACE", 3, [1, 2 * 5 * 6 + 4, 3]),
                               ("COLOR", 4, [1, n_vert, 3])):  # DT_FLOAT, DT_INT32, DT_UINT8
        v = by_tag[f"{ls.tag}_{kind}"]
        md = tb.MeshPluginData.FromString(v.metadata.plugin_data.content)
        assert v.metadata.plugin_data.plugin_name == "mesh" and md.name == ls.tag
        assert md.components == 0b1110 and list(md.shape) == shape
        assert v.tensor.dtype == dtype, kind
        assert "PCA landscape over 1..4 step" in v.metadata.summary_description
    img = by_tag[f"{ls.tag}/contour"]
    assert img.metadata.plugin_data.plugin_name == "images"
    assert img.tensor.string_val[2].startswith(b"\x89PNG")


def test_mesh_is_the_surface_in_a_box_with_the_path_above():
    ls = pca(n=5)
    parts = tb_landscape.mesh_parts(ls)
    v, f, c = parts["VERTEX"][0], parts["FACE"][0], parts["COLOR"][0]
    grid = v[:30].reshape(6, 5, 3)  # rows = y, columns = x
    assert np.allclose(grid[0, :, 0], np.linspace(-1, 1, 5))
    assert np.allclose(grid[:, 0, 2], -np.linspace(-1, 1, 6))
    t = (ls.z - ls.z.min()) / np.ptp(ls.z)
    assert np.allclose(grid[..., 1], t, atol=1e-6)
    assert f.min() == 0 and f.max() == len(v) - 1
    # every face points up (+Y): the dashboard lights and shows front faces
    a, b, cc = v[f[:, 0]], v[f[:, 1]], v[f[:, 2]]
    assert (np.cross(b - a, cc - a)[:, 1] > 0).all()
    assert (c[30:] == PATH_COLOR).all()
    # the path's markers sit just above the loss at their points
    centers = v[30:].reshape(4, 3, 3).mean(axis=1)
    # (scaled as the grid's loss, clamped into the box: the last one lies below the grid)
    want = np.clip((ls.path_z - ls.z.min()) / np.ptp(ls.z), 0, 1) + 0.02
    assert np.allclose(centers[:, 1], want, atol=1e-6)


def test_mesh_of_the_largest_grid_fits_the_dashboards_uint16_indices():
    """landscape_size may be 256: 65 536 grid points, plus the path's markers, would
    overflow the Mesh dashboard's Uint16 face indices; the grid is thinned instead."""
    n = 256
    x = np.linspace(-1, 1, n)
    ls = Landscape("big", x, x, np.add.outer(x ** 2, x ** 2), intervals=list(range(1, 41)),
                   path_x=np.linspace(1, 0, 40), path_y=np.zeros(40), path_z=np.ones(40))
    t0 = time.perf_counter()
    parts = tb_landscape.mesh_parts(ls)
    dt = time.perf_counter() - t0
    nv = parts["VERTEX"].shape[1]
    assert nv <= tb_landscape.MAX_VERTICES and parts["FACE"].max() < 65536
    grid = parts["VERTEX"][0, :nv - 120]
    assert np.isclose(grid[:, 0].min(), -1) and np.isclose(grid[:, 0].max(), 1)  # edges kept
    print(f"256x256 landscape + 40-point path: mesh of {nv} vertices, "
          f"{parts['FACE'].shape[1]} faces in {dt * 1e3:.0f} ms")


@pytest.mark.parametrize("ny, nx, n_path", [(256, 256, 0), (255, 257, 3), (2, 40_000, 10),
                                             (300, 300, 9_000), (3, 3, 100_000), (181, 181, 40)])
def test_every_mesh_fits_the_uint16_indices(ny, nx, n_path):
    """Odd shapes, paths longer than the vertex budget (a hang before: no grid step
    made room for them): the mesh is thinned, its edges and the path's ends kept; the
    contour image of a 100 000-point path is drawn in bounded time (hang guard 60 s)."""
    import subprocess
    import sys

    code = f"""
import numpy as np
from summarylog.dialects import tb_landscape
from summarylog.landscape import Landscape
ls = Landscape("x", np.arange({nx}.0), np.arange({ny}.0), np.ones(({ny}, {nx})),
               intervals=[1, 2, 3] if {n_path} else [],
               path_x=np.linspace(0, {nx} - 1, {n_path}) if {n_path} else None,
               path_y=np.zeros({n_path}) if {n_path} else None,
               path_z=np.ones({n_path}) if {n_path} else None)
p = tb_landscape.mesh_parts(ls)
v, grid = p["VERTEX"][0], (p["COLOR"][0] != [230, 30, 30]).any(-1)  # not the path's markers
marks = v[~grid].reshape(-1, 3, 3).mean(1)
assert {n_path} == 0 or np.allclose(marks[[0, -1], 0], [-1, 1]), marks  # the path's ends kept
from summarylog.dialects.landscape_png import contour_image
contour_image(ls)  # the image's path is thinned too (MAX_PATH points)
print(v.shape[0], p["FACE"].max(), v[grid, 0].min(), v[grid, 0].max())
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr[-2000:]
    nv, top, xmin, xmax = r.stdout.split()
    assert int(nv) <= tb_landscape.MAX_VERTICES and int(top) < 65536
    assert float(xmin) == -1 and float(xmax) == 1
    print(f"{ny}x{nx} grid, {n_path}-point path: mesh of {nv} vertices")


def test_non_finite_losses_are_drawn_not_crashed():
    ls = pca(n=5)
    ls.z[0, 0], ls.z[1, 1], ls.z[2, 2] = np.nan, np.inf, -np.inf
    parts = tb_landscape.mesh_parts(ls)
    v, c = parts["VERTEX"][0], parts["COLOR"][0]
    assert np.isfinite(v).all()
    assert (c[0] == NAN_COLOR).all() and v[0, 1] == 1.0
    img = contour_image(ls)
    assert img.dtype == np.uint8 and (img == NAN_COLOR).all(axis=-1).any()
    # every loss non-finite, or all equal, or one point: still a picture (or the value alone)
    for z in (np.full((6, 5), np.nan), np.full((6, 5), 2.0)):
        odd = Landscape("odd", ls.x, ls.y, z)
        assert np.isfinite(tb_landscape.mesh_parts(odd)["VERTEX"]).all()
        contour_image(odd)
    one = Landscape("one", [0.0], [0.0], [[1.0]], decomposition="Random")
    assert [v.tag for v in tb_landscape.landscape_values("one", one.to_message())] == ["one"]


def test_contour_image_shows_the_path_and_is_deterministic():
    ls = pca(n=8)
    img = contour_image(ls, size=200)
    assert img.shape == (216, 238, 3)
    plot = img[8:208, 8:208]
    colors = {tuple(p) for p in plot.reshape(-1, 3)}
    assert {PATH_COLOR, START_COLOR, END_COLOR} <= colors
    # the path starts at (1, 0.5): x = 1 is at 80 % of [-1, 1.5]; y = 0.5 at 80 % of [-0.5, 0.75]
    r, c = round((1 - 0.8) * 199), round(0.8 * 199)
    assert tuple(plot[r, c]) == START_COLOR
    assert np.array_equal(contour_image(ls, size=200), img)
    # low loss is dark blue, high loss yellow: the colour bar's bottom and top
    assert tuple(img[207, 220]) == (13, 8, 135) and tuple(img[8, 220]) == (250, 230, 35)


# ---- the Reader: both dialects alike, damage reported ------------------------------------

@pytest.mark.parametrize("fmt", ["mindinsight", "tensorboard"])
def test_reader_returns_every_landscape_of_a_run(tmp_path, fmt):
    a, f = pca(), final()
    write_landscapes(tmp_path, [a, f], format=fmt)
    with summarylog.SummaryRecord(str(tmp_path), format=fmt) as rec:  # a later file, step 5
        rec.add_value("LANDSCAPE", a.tag, pca(n=3))
        rec.add_value("scalar", "loss", 1.0)
        rec.record(5)
    r = Reader(str(tmp_path))
    got = r.landscapes(".")
    assert list(got) == [a.tag, f.tag]
    assert [s for s, _ in got[a.tag]] == [0, 5] and [s for s, _ in got[f.tag]] == [0]
    assert same(got[a.tag][0][1], as_stored(a)) and same(got[f.tag][0][1], as_stored(f))
    assert got[a.tag][1][1].z.shape == (4, 3)
    assert all(rep.ok for rep in r.damage(".", deep=True).values())
    assert Reader(str(tmp_path)).scalars(".", "loss").value.tolist() == [1.0]


def _bad_landscape_bytes() -> list[tuple[str, bytes]]:
    """LossLandscape bytes a viewer could not draw, each with what is wrong."""
    shape = ms.LossLandscape()
    shape.CopyFrom(final().to_message())
    shape.landscape.z.dims[:] = [5, 5]  # 16 values
    huge = ms.LossLandscape()
    huge.CopyFrom(final().to_message())
    huge.landscape.z.dims[:] = [1 << 32, 1 << 32]  # a product that wraps int64 to 0
    huge.landscape.z.ClearField("float_data")
    neg = ms.LossLandscape()
    neg.CopyFrom(final().to_message())
    neg.landscape.x.dims[:] = [-4]
    good = final().to_message().SerializeToString()
    return [("z shape", shape.SerializeToString()), ("huge dims", huge.SerializeToString()),
            ("negative dims", neg.SerializeToString()), ("truncated", good[:-7]),
            ("not protobuf", b"\x0a\xff\xff\xff\xff\x0f")]


def _write_raw(path: pathlib.Path, header: bytes, payloads: list[bytes]) -> None:
    with RecordWriter(str(path)) as rw:
        for p in [header, *payloads]:
            rw.write(p)


@pytest.mark.parametrize("dialect", ["mindspore", "tensorboard"])
def test_damaged_landscape_values_are_reported_not_fatal(tmp_path, dialect):
    """Each hostile landscape shares its event with a good landscape and a scalar:
    those two are read, the bad one is left out and counted, memory stays small."""
    good = pca("good")
    payloads = []
    for step, (what, raw) in enumerate(_bad_landscape_bytes()):
        if dialect == "mindspore":
            vals = [len_field(1, b"bad") + len_field(10, raw),
                    ms.Value(tag="good", loss_landscape=good.to_message()).SerializeToString(),
                    ms.Value(tag="loss", scalar_value=1.0).SerializeToString()]
            payloads.append(b"\x09" + bytes(8) + b"\x10" + bytes([step])
                            + len_field(5, b"".join(len_field(1, v) for v in vals)))
        else:
            md = tb.SummaryMetadata(plugin_data={"plugin_name": "loss_landscape"})
            ev = tb.Event(wall_time=1.0, step=step)
            ev.summary.value.add(tag="bad", metadata=md, tensor=tb.TensorProto(
                dtype=tb.DataType.values_by_name["DT_STRING"].number, string_val=[raw]))
            ev.summary.value.extend(tb_landscape.landscape_values("good", good.to_message()))
            ev.summary.value.add(tag="loss", simple_value=1.0)
            payloads.append(ev.SerializeToString())
    if dialect == "mindspore":
        name, header = "events.out.events.summary.1.vm_MS", ms.Event(
            wall_time=1.0, version="MindSpore.Event:1").SerializeToString()
    else:
        name, header = "events.out.tfevents.1.vm", tb.Event(
            wall_time=1.0, file_version="brain.Event:2").SerializeToString()
    _write_raw(tmp_path / name, header, payloads)
    n = len(payloads)
    tracemalloc.start()
    r = Reader(str(tmp_path))
    got = r.landscapes(".")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert list(got) == ["good"] and [s for s, _ in got["good"]] == list(range(n))
    assert all(same(ls, as_stored(good)) for _, ls in got["good"])
    assert r.scalars(".", "loss").value.tolist() == [1.0] * n
    [rep] = r.damage(".").values()
    assert rep.bad_values == n and not rep.damage
    assert peak < 64 << 20
    print(f"{dialect}: {n} hostile landscapes ({', '.join(w for w, _ in _bad_landscape_bytes())})"
          f" each counted in bad_values, their events' other values read; "
          f"peak {peak / 2**20:.1f} MiB")


def test_a_run_without_landscapes_has_none(tmp_path):
    with summarylog.SummaryRecord(str(tmp_path)) as rec:
        rec.add_value("scalar", "loss", 1.0)
        rec.record(0)
    assert Reader(str(tmp_path)).landscapes(".") == {}
    with pytest.raises(KeyError):
        Reader(str(tmp_path)).landscapes("nope")


def test_cli_shows_landscapes(capsys):
    from summarylog.cli import main
    from summarylog.cli_format import brief

    [(_, ls)] = Reader(str(MS_RUN)).landscapes(".")["landscape_[1, 4]"]
    assert brief("landscape", ls) == "PCA 4x4 over 1..4 step, loss 4.14928..4.9492"
    main(["cat", str(MS_RUN)])
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    got = {d["tag"]: d["value"] for d in lines if d["kind"] == "landscape"}
    assert list(got) == MS_TAGS
    assert got["landscape_[1, 4]"]["z"] == ls.z.tolist()
    assert got["landscape_[8]"]["path_x"] is None
    assert got["landscape_[8]"]["decomposition"] == "Random"
