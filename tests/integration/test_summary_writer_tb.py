"""summarylog.SummaryWriter, end to end: one run written through every public
method, read by TensorBoard itself (issue 22, point 3).

Two checks, both through TensorBoard's own code:

* **parity, in process**: the same calls, with the same inputs, step and wall
  time, go through ``torch.utils.tensorboard.SummaryWriter`` (the oracle) into
  ``<root>/torch`` and through ours into ``<root>/ours``.  Each tree is loaded
  with TensorBoard's plugin event multiplexer (the ``--load_fast=false``
  loader), and every (run, tag) is decoded as the plugins decode it: plugin
  metadata parsed, tensors to numpy, PNG/GIF to pixels, WAV to samples, the
  graph to its GraphDef, the projector's files through the projector plugin's
  routes.  The two decoded trees must be equal, method by method.
* **the real server**: ``python -m tensorboard.main`` serves ``<root>`` once per
  ``--load_fast`` mode (``true``: the Rust data server), and each plugin's HTTP
  routes, queried as the dashboard queries them, must show the logged values
  (scalars, images, histograms, distributions, text, graphs, projector,
  pr_curves, custom_scalars, mesh, audio, hparams) for our run, and the same
  decoded values as for torch's.  All twelve plugins answer in both modes; the
  one gap of ``--load_fast=true`` (no float64 scalar) is torch's as well.

``SLG_SW_UNDER_TEST=torch`` puts torch's SummaryWriter on both sides: that
proves the harness itself (every comparison holds for the oracle).

The oracle needs ``moviepy<2`` (torch's add_video imports ``moviepy.editor``,
gone in moviepy 2, and otherwise logs nothing) and ``onnx`` (its add_onnx_graph).
Ours and torch's are compared exactly (no float tolerance); the only tolerance is
the server check of histogram outer edges against the data's min/max (float32 in
the Python loader).  Not compared: wall times the peers take from the clock, and
GIF frame timing (printed), each said where it is skipped.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import io
import json
import math
import os
import time
import warnings
import wave
from typing import Any, Callable

import numpy as np
import pytest

from conftest import IN_CI, require

_NEEDED = ("tensorboard", "torch", "matplotlib", "PIL", "moviepy.editor", "onnx")


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ImportError:  # the parent package is missing
        return False


_missing = [m for m in _NEEDED if not _importable(m)]
if _missing:  # require(), at module level: under CI a missing package fails the run
    if IN_CI:
        raise ImportError(f"{_missing} required under CI but missing (the test extra needs "
                          f"moviepy==1.0.3 and onnx)")
    pytest.skip(f"{_missing} not available", allow_module_level=True)

import matplotlib  # noqa: E402

matplotlib.use("Agg")  # before pyplot: no display here

import torch  # noqa: E402
from google.protobuf import json_format, text_format  # noqa: E402
from PIL import Image  # noqa: E402
from tensorboard import plugin_util  # noqa: E402
from tensorboard.compat.proto import graph_pb2  # noqa: E402
from tensorboard.plugins.audio import metadata as audio_metadata  # noqa: E402
from tensorboard.plugins.custom_scalar import layout_pb2  # noqa: E402
from tensorboard.plugins.custom_scalar import metadata as cs_metadata  # noqa: E402
from tensorboard.plugins.distribution import compressor  # noqa: E402
from tensorboard.plugins.histogram import metadata as histogram_metadata  # noqa: E402
from tensorboard.plugins.hparams import metadata as hp_metadata  # noqa: E402
from tensorboard.plugins.image import metadata as image_metadata  # noqa: E402
from tensorboard.plugins.mesh import metadata as mesh_metadata  # noqa: E402
from tensorboard.plugins.pr_curve import metadata as pr_metadata  # noqa: E402
from tensorboard.plugins.projector import projector_plugin  # noqa: E402
from tensorboard.plugins.scalar import metadata as scalar_metadata  # noqa: E402
from tensorboard.plugins.text import metadata as text_metadata  # noqa: E402
from tensorboard.plugins.text import text_plugin  # noqa: E402
from tensorboard.util import tensor_util  # noqa: E402
from tb_server import Server, _data_server_usable, _start_server, _stop  # noqa: E402
from tb_server import hparams_tab_in_process, plugin_context  # noqa: E402
from tb_server import loaded_multiplexer as load_mux  # noqa: E402

import summarylog  # noqa: E402

T0 = 1_760_000_000.25  # every call that takes a wall time gets T0 + step: they compare exactly
RUN = "run"             # each side's log_dir is <side>/run; add_scalars/add_hparams add sub-runs
ONNX_RUN = "onnx"       # a run holds one graph: the ONNX graph goes through a second writer
HP_RUN = "hp"           # add_hparams(run_name=...): a sub-run of RUN, as the peers make it


# ---------------------------------------------------------------------------
# the inputs: one call of every public method (several where a keyword matters)
# ---------------------------------------------------------------------------

class SmallCNN(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 2, kernel_size=3)
        self.fc = torch.nn.Linear(2 * 4 * 4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.relu(self.conv(x)).flatten(1))


def _onnx_model(path: str) -> str:
    """A small ONNX model (MatMul + Add + Relu) built with onnx.helper."""
    import onnx
    from onnx import TensorProto, helper

    w = helper.make_tensor("W", TensorProto.FLOAT, [3, 2], [0.5, -1.0, 2.0, 0.25, -0.75, 1.5])
    b = helper.make_tensor("B", TensorProto.FLOAT, [2], [0.1, -0.2])
    nodes = [helper.make_node("MatMul", ["X", "W"], ["XW"], name="matmul"),
             helper.make_node("Add", ["XW", "B"], ["Z"], name="add"),
             helper.make_node("Relu", ["Z"], ["Y"], name="relu")]
    graph = helper.make_graph(
        nodes, "small", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 3])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 2])], initializer=[w, b])
    onnx.save(helper.make_model(graph), path)
    return path


def _figure(kind: int) -> Any:
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(1.6, 1.2), dpi=50)
    ax = fig.add_subplot(1, 1, 1)
    ax.plot([0, 1, 2, 3], [0, 1, 0, 1][::1 if kind == 0 else -1], color="C%d" % kind)
    ax.set_axis_off()
    return fig


@dataclasses.dataclass
class Inputs:
    """Everything logged, so the server checks can compare with it."""

    scalars: dict[str, list[tuple[int, float]]]
    scalars_groups: dict[str, dict[str, list[tuple[int, float]]]]
    histogram_values: np.ndarray
    histogram_raw: dict[str, Any]
    image_chw: np.ndarray
    image_hwc_float: np.ndarray
    images_nchw: np.ndarray
    images_nhwc_float: np.ndarray
    image_gray: np.ndarray
    boxes_img: np.ndarray
    video: np.ndarray
    clips: np.ndarray
    audio: np.ndarray
    audio_rate: int
    texts: dict[str, str]
    embedding: np.ndarray
    embedding_meta: list[str]
    embedding_imgs: np.ndarray
    embedding2_meta: list[list[str]]
    pr_labels: np.ndarray
    pr_predictions: np.ndarray
    pr_weights: np.ndarray
    pr_raw: dict[str, np.ndarray]
    layout: dict[str, Any]
    mesh: dict[str, np.ndarray]
    mesh_config: dict[str, Any]
    hparams: dict[str, Any]
    metrics: dict[str, float]
    tensor: np.ndarray


def make_inputs() -> Inputs:
    rng = np.random.default_rng(20261126)
    palette = np.array([0, 64, 128, 255], np.uint8)  # few colours: GIF palettes are exact
    return Inputs(
        scalars={"scalar/plain": [(0, 0.1234)], "scalar/new_style": [(1, 2.5)],
                 "scalar/double": [(2, 1 / 3)], "scalar/tensor": [(3, 1.5)]},
        scalars_groups={"group/loss": {"train": [(4, 1.0), (5, 0.5)], "val": [(4, 2.0), (5, 1.25)]}},
        histogram_values=rng.normal(0.5, 2.0, size=500).astype(np.float64),
        histogram_raw=dict(min=-1.0, max=3.0, num=10, sum=8.0, sum_squares=20.0,
                           bucket_limits=[0.0, 1.0, 2.0, 3.0], bucket_counts=[2, 3, 4, 1]),
        image_chw=rng.integers(0, 256, size=(3, 6, 8), dtype=np.uint8),
        image_hwc_float=rng.random((5, 7, 3), dtype=np.float32),
        images_nchw=rng.integers(0, 256, size=(5, 3, 4, 6), dtype=np.uint8),
        images_nhwc_float=rng.random((10, 3, 2, 3), dtype=np.float32),  # two rows of the 8-wide grid
        image_gray=rng.random((1, 5, 6), dtype=np.float32),
        boxes_img=rng.random((3, 24, 32), dtype=np.float32),
        video=palette[rng.integers(0, 4, size=(1, 3, 3, 8, 10))],
        clips=palette[rng.integers(0, 4, size=(3, 2, 3, 6, 5))],  # padded to 4 clips, tiled in one row
        audio=np.clip(np.sin(np.arange(400) * 0.07) * 0.8 + rng.normal(0, 0.05, 400), -1, 1)
        .astype(np.float32)[None, :],
        audio_rate=8000,
        texts={"text/plain": "hello world", "text/markdown": "**bold** and `code`\n\n* one\n* two",
               "text/unicode": "héllo ✓ — 日本語 <b>not html</b>"},
        embedding=rng.normal(size=(12, 4)).astype(np.float32),
        embedding_meta=[f"label_{i % 3}" for i in range(12)],
        embedding_imgs=rng.random((12, 3, 4, 4), dtype=np.float32),
        embedding2_meta=[[f"n{i}", "odd" if i % 2 else "even"] for i in range(12)],
        pr_labels=rng.integers(0, 2, size=60).astype(np.int64),
        pr_predictions=rng.random(60).astype(np.float32),
        pr_weights=rng.random(60).astype(np.float32),
        pr_raw=dict(true_positive_counts=np.array([75, 64, 21, 5, 0], np.int64),
                    false_positive_counts=np.array([150, 105, 18, 0, 0], np.int64),
                    true_negative_counts=np.array([0, 45, 132, 150, 150], np.int64),
                    false_negative_counts=np.array([0, 11, 54, 70, 75], np.int64),
                    precision=np.array([0.3333333, 0.3786982, 0.5384616, 1.0, 0.0], np.float64),
                    recall=np.array([1.0, 0.8533334, 0.28, 0.0666667, 0.0], np.float64)),
        layout={"Losses": {"both": ["Multiline", ["scalar/plain", "scalar/tensor"]]},
                "Bands": {"band": ["Margin", ["scalar/plain", "scalar/new_style", "scalar/double"]]}},
        mesh=dict(vertices=np.array([[[1, 1, 1], [-1, -1, 1], [1, -1, -1], [-1, 1, -1]]], np.float32),
                  colors=np.array([[[255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 0, 255]]], np.uint8),
                  faces=np.array([[[0, 2, 3], [0, 3, 1], [0, 1, 2], [1, 3, 2]]], np.int32)),
        mesh_config={"camera": {"cls": "PerspectiveCamera", "fov": 75}},
        hparams={"lr": 0.01, "optimizer": "adam", "batch_norm": True, "layers": 3},
        metrics={"hp/accuracy": 0.75, "hp/loss": 0.25},
        tensor=np.arange(6, dtype=np.float32).reshape(2, 3) / 7,
    )


# every public method of the peers' SummaryWriter (_keys_of: the (run, tag)s each writes)
METHODS = ("add_scalar", "add_scalars", "add_histogram", "add_histogram_raw", "add_image",
           "add_images", "add_image_with_boxes", "add_figure", "add_video", "add_audio",
           "add_text", "add_graph", "add_onnx_graph", "add_embedding", "add_pr_curve",
           "add_pr_curve_raw", "add_custom_scalars", "add_custom_scalars_marginchart",
           "add_custom_scalars_multilinechart", "add_mesh", "add_hparams", "add_tensor")


def log_everything(writer_cls: type, root: str, inp: Inputs, onnx_path: str) -> dict[str, str]:
    """Call every public method once (or a few times, for its keywords) on a
    ``writer_cls`` writing ``<root>/run`` (+ ``<root>/onnx``); return
    {method: error} for the methods that raised (the parity test reports them)."""
    errors: dict[str, str] = {}

    def call(method: str, *args: Any, **kwargs: Any) -> None:
        try:
            with warnings.catch_warnings():
                # torch.jit.trace (add_graph, both sides) is deprecated in torch >= 2.10
                warnings.simplefilter("ignore", DeprecationWarning)
                getattr(w, method)(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - reported per method, compared with the oracle
            errors.setdefault(method, f"{type(exc).__name__}: {exc}")

    def wall(step: int) -> float:
        return T0 + step

    w = writer_cls(log_dir=os.path.join(root, RUN))
    (_, v0), = inp.scalars["scalar/plain"]
    call("add_scalar", "scalar/plain", v0, 0, walltime=wall(0))
    call("add_scalar", "scalar/new_style", inp.scalars["scalar/new_style"][0][1], 1, walltime=wall(1),
         new_style=True)
    call("add_scalar", "scalar/double", inp.scalars["scalar/double"][0][1], 2, walltime=wall(2),
         new_style=True, double_precision=True)
    call("add_scalar", "scalar/tensor", torch.tensor(inp.scalars["scalar/tensor"][0][1]), 3,
         walltime=wall(3))
    for main_tag, groups in inp.scalars_groups.items():
        for i in range(2):
            step = groups["train"][i][0]
            call("add_scalars", main_tag, {k: v[i][1] for k, v in groups.items()}, step, walltime=wall(step))

    call("add_histogram", "hist/int_bins", torch.from_numpy(inp.histogram_values), 5, bins=16,
         walltime=wall(5))
    call("add_histogram", "hist/tensorflow", inp.histogram_values, 6, bins="tensorflow", walltime=wall(6))
    call("add_histogram", "hist/auto", inp.histogram_values, 7, bins="auto", walltime=wall(7))
    call("add_histogram", "hist/fd", inp.histogram_values.astype(np.float32), 7, bins="fd", walltime=wall(7))
    call("add_histogram", "hist/max_bins", inp.histogram_values, 7, bins=64, walltime=wall(7), max_bins=10)
    call("add_histogram_raw", "hist/raw", global_step=8, walltime=wall(8), **inp.histogram_raw)

    call("add_image", "image/chw_uint8", torch.from_numpy(inp.image_chw), 9, walltime=wall(9))
    call("add_image", "image/hwc_float", inp.image_hwc_float, 9, walltime=wall(9), dataformats="HWC")
    call("add_images", "images/batch", inp.images_nchw, 10, walltime=wall(10))
    call("add_images", "images/nhwc_float", inp.images_nhwc_float, 10, walltime=wall(10), dataformats="NHWC")
    call("add_image", "image/gray", inp.image_gray, 9, walltime=wall(9))
    call("add_image_with_boxes", "image/boxes", torch.from_numpy(inp.boxes_img),
         torch.tensor([[1.0, 2.0, 12.0, 10.0], [8.0, 5.0, 30.0, 22.0]]), 11, walltime=wall(11),
         labels=["cat", "dog"])
    call("add_figure", "figure/one", _figure(0), 12, walltime=wall(12))
    call("add_figure", "figure/list", [_figure(0), _figure(1)], 13, walltime=wall(13))
    call("add_video", "video", torch.from_numpy(inp.video), 14, fps=4, walltime=wall(14))
    call("add_video", "video/clips", inp.clips, 14, fps=10, walltime=wall(14))
    call("add_audio", "audio", torch.from_numpy(inp.audio), 15, sample_rate=inp.audio_rate,
         walltime=wall(15))
    for i, (tag, text) in enumerate(inp.texts.items()):
        call("add_text", tag, text, 16 + i, walltime=wall(16 + i))

    torch.manual_seed(0)
    model = SmallCNN().eval()
    call("add_graph", model, torch.zeros(1, 1, 6, 6))
    call("add_embedding", torch.from_numpy(inp.embedding), metadata=inp.embedding_meta,
         label_img=torch.from_numpy(inp.embedding_imgs), global_step=17, tag="emb")
    call("add_embedding", inp.embedding * 2, metadata=inp.embedding2_meta, global_step=18, tag="emb2",
         metadata_header=["name", "parity"])
    call("add_pr_curve", "pr/curve", torch.from_numpy(inp.pr_labels),
         torch.from_numpy(inp.pr_predictions), 18, num_thresholds=11, walltime=wall(18))
    call("add_pr_curve", "pr/weighted", inp.pr_labels, inp.pr_predictions, 18, weights=inp.pr_weights,
         walltime=wall(18))
    call("add_pr_curve_raw", "pr/raw", global_step=19, num_thresholds=5, walltime=wall(19), **inp.pr_raw)
    # the three write one tag (the layout); TensorBoard shows the last: the full layout
    call("add_custom_scalars_multilinechart", ["scalar/plain", "scalar/tensor"], category="Multi",
         title="two")
    call("add_custom_scalars_marginchart", ["scalar/plain", "scalar/new_style", "scalar/double"],
         category="Margin", title="band")
    call("add_custom_scalars", inp.layout)
    call("add_mesh", "mesh", torch.from_numpy(inp.mesh["vertices"]),
         colors=torch.from_numpy(inp.mesh["colors"]), faces=torch.from_numpy(inp.mesh["faces"]),
         config_dict=inp.mesh_config, global_step=20, walltime=wall(20))
    call("add_hparams", inp.hparams, inp.metrics,
         hparam_domain_discrete={"optimizer": ["adam", "sgd"], "batch_norm": [True, False]},
         run_name=HP_RUN, global_step=21)
    call("add_tensor", "tensor/raw", torch.from_numpy(inp.tensor), 22, walltime=wall(22))
    w.close()

    w = writer_cls(log_dir=os.path.join(root, ONNX_RUN))
    call("add_onnx_graph", onnx_path)
    w.close()
    return errors


# (run, tag) keys each method writes, relative to a side's root
def _keys_of(inp: Inputs) -> dict[str, list[tuple[str, str]]]:
    hp_tags = [hp_metadata.EXPERIMENT_TAG, hp_metadata.SESSION_START_INFO_TAG,
               hp_metadata.SESSION_END_INFO_TAG, *inp.metrics]
    return {
        "add_scalar": [(RUN, t) for t in inp.scalars],
        "add_scalars": [(f"{RUN}/{m.replace('/', '_')}_{k}", m)
                        for m, g in inp.scalars_groups.items() for k in g],
        "add_histogram": [(RUN, t) for t in ("hist/int_bins", "hist/tensorflow", "hist/auto", "hist/fd",
                                             "hist/max_bins")],
        "add_histogram_raw": [(RUN, "hist/raw")],
        "add_image": [(RUN, "image/chw_uint8"), (RUN, "image/hwc_float"), (RUN, "image/gray")],
        "add_images": [(RUN, "images/batch"), (RUN, "images/nhwc_float")],
        "add_image_with_boxes": [(RUN, "image/boxes")],
        "add_figure": [(RUN, "figure/one"), (RUN, "figure/list")],
        "add_video": [(RUN, "video"), (RUN, "video/clips")],
        "add_audio": [(RUN, "audio")],
        "add_text": [(RUN, f"{t}/text_summary") for t in inp.texts],
        "add_graph": [(RUN, "__run_graph__"), (RUN, "step1")],
        "add_onnx_graph": [(ONNX_RUN, "__run_graph__")],
        "add_embedding": [(RUN, "projector")],  # files, read through the projector plugin
        "add_pr_curve": [(RUN, "pr/curve"), (RUN, "pr/weighted")],
        "add_pr_curve_raw": [(RUN, "pr/raw")],
        # one tag, three events in call order: multilinechart, marginchart, add_custom_scalars
        "add_custom_scalars_multilinechart": [(RUN, cs_metadata.CONFIG_SUMMARY_TAG + "#0")],
        "add_custom_scalars_marginchart": [(RUN, cs_metadata.CONFIG_SUMMARY_TAG + "#1")],
        "add_custom_scalars": [(RUN, cs_metadata.CONFIG_SUMMARY_TAG + "#2")],
        "add_mesh": [(RUN, f"mesh_{c}") for c in ("VERTEX", "FACE", "COLOR")],
        "add_hparams": [(f"{RUN}/{HP_RUN}", t) for t in hp_tags] + [(".", "hparams_tab")],
        "add_tensor": [(RUN, "tensor/raw")],
    }


# wall times the peers take from the clock (these methods accept none): not compared
_CLOCK_TAGS = {"__run_graph__", "step1", cs_metadata.CONFIG_SUMMARY_TAG}
_CLOCK_RUNS = {f"{RUN}/{HP_RUN}"}


# ---------------------------------------------------------------------------
# decoding, as TensorBoard's plugins decode
# ---------------------------------------------------------------------------

def decode_image(data: bytes, timing: bool = False) -> dict[str, Any]:
    """PNG -> its pixels; GIF -> every frame's RGB pixels (+ frame durations and loop
    with ``timing``: torch's GIF timing depends on the installed moviepy/imageio, so
    it is printed, not compared)."""
    with Image.open(io.BytesIO(data)) as im:
        if im.format == "GIF":
            frames, durations = [], []
            for i in range(getattr(im, "n_frames", 1)):
                im.seek(i)
                frames.append(np.asarray(im.convert("RGB")))
                durations.append(im.info.get("duration"))
            out: dict[str, Any] = {"format": "GIF", "frames": frames}
            if timing:
                out.update(durations=durations, loop=im.info.get("loop"))
            return out
        return {"format": im.format, "mode": im.mode, "pixels": np.asarray(im)}


def decode_wav(data: bytes) -> dict[str, Any]:
    with wave.open(io.BytesIO(data)) as f:
        assert f.getsampwidth() == 2, f.getsampwidth()
        return {"rate": f.getframerate(), "channels": f.getnchannels(), "width": f.getsampwidth(),
                "samples": np.frombuffer(f.readframes(f.getnframes()), "<i2")}


_CONTENT_PARSERS: dict[str, Callable[[bytes], Any]] = {
    "scalars": scalar_metadata.parse_plugin_metadata,
    "histograms": histogram_metadata.parse_plugin_metadata,
    "images": image_metadata.parse_plugin_metadata,
    "audio": audio_metadata.parse_plugin_metadata,
    "text": text_metadata.parse_plugin_metadata,
    "pr_curves": pr_metadata.parse_plugin_metadata,
    "mesh": mesh_metadata.parse_plugin_metadata,
}


def _message(m: Any) -> Any:
    return json_format.MessageToDict(m, preserving_proto_field_name=True) if hasattr(m, "DESCRIPTOR") else m


def decode_metadata(md: Any) -> dict[str, Any]:
    name = md.plugin_data.plugin_name
    content: Any = md.plugin_data.content
    if name in _CONTENT_PARSERS:
        content = _message(_CONTENT_PARSERS[name](content))
    if name == "mesh" and content.get("json_config"):
        content["json_config"] = json.loads(content["json_config"])  # key order is free
    return {"plugin": name, "content": content, "display_name": md.display_name,
            "description": md.summary_description, "data_class": md.data_class}


def decode_hparams_content(tag: str, content: bytes) -> dict[str, Any]:
    parse = {hp_metadata.EXPERIMENT_TAG: hp_metadata.parse_experiment_plugin_data,
             hp_metadata.SESSION_START_INFO_TAG: hp_metadata.parse_session_start_info_plugin_data,
             hp_metadata.SESSION_END_INFO_TAG: hp_metadata.parse_session_end_info_plugin_data}[tag]
    d = _message(parse(content))
    # the peers' add_hparams takes no wall time: its start/end times are the clock's
    for k in ("start_time_secs", "end_time_secs"):
        d.pop(k, None)
    return d


def decode_value(plugin: str, tag: str, arr: np.ndarray) -> Any:
    if plugin == "images":
        assert arr.dtype == object and arr.ndim == 1, (tag, arr.dtype, arr.shape)
        return [arr[0], arr[1]] + [decode_image(b) for b in arr[2:]]
    if plugin == "audio":
        # [k, 2] (wav, label) as the audio plugin writes; [k] (wav) from a legacy Summary.Audio
        assert arr.dtype == object and arr.ndim in (1, 2), (tag, arr.dtype, arr.shape)
        rows = arr if arr.ndim == 2 else arr[:, None]
        return [[decode_wav(row[0]), *row[1:]] for row in rows]
    if plugin == "graphs":
        return _message(graph_pb2.GraphDef.FromString(arr.item()))
    if plugin == "graph_tagged_run_metadata":
        from tensorboard.compat.proto import config_pb2

        return _message(config_pb2.RunMetadata.FromString(arr.item()))
    if plugin == "custom_scalars":
        return _message(layout_pb2.Layout.FromString(arr.item()))
    if arr.dtype == object:
        return {"dtype": "bytes", "shape": arr.shape, "values": arr.ravel().tolist()}
    return arr


@dataclasses.dataclass
class Decoded:
    """One (run, tag) as TensorBoard decodes it."""

    metadata: dict[str, Any]
    events: list[tuple[int, float | None, Any]]


def projector_view(m: Any, root: str) -> dict[str, Any]:
    """The projector tab of RUN through the projector plugin's own routes."""
    from werkzeug import test as wtest
    from werkzeug import wrappers as wwrappers

    plugin = projector_plugin.ProjectorPlugin(plugin_context(root, m))
    apps = plugin.get_plugin_apps()
    client = wtest.Client(lambda env, start: _route(apps, env, start), wwrappers.Response)

    def get(path: str, **params: str) -> bytes:
        resp = client.get(path, query_string=params)
        assert resp.status_code == 200, (path, params, resp.status_code, resp.data[:500])
        return resp.data

    runs = json.loads(get("/runs"))
    if RUN not in runs:
        return {"runs": runs}
    info = json.loads(get("/info", run=RUN))
    out: dict[str, Any] = {"runs": sorted(runs), "embeddings": {}}
    for emb in info.get("embeddings", []):
        name = emb["tensorName"]
        tensor = np.frombuffer(get("/tensor", run=RUN, name=name), "<f4")
        entry = {"info": {k: v for k, v in emb.items() if not k.endswith("Path")},
                 "tensor": tensor, "metadata": get("/metadata", run=RUN, name=name).decode()}
        if "sprite" in emb:
            entry["sprite"] = decode_image(get("/sprite_image", run=RUN, name=name))
        out["embeddings"][name] = entry
    return out


def _route(apps: dict[str, Any], env: dict[str, Any], start: Any) -> Any:
    app = apps.get(env["PATH_INFO"])
    if app is None:
        start("404 Not Found", [("Content-Type", "text/plain")])
        return [b"no route"]
    return app(env, start)


def hparams_tab(m: Any, root: str) -> dict[str, Any]:
    """The HParams tab's two requests (experiment, session groups) as its backend answers them."""
    exp, groups = hparams_tab_in_process(m, root)
    exp_d = json.loads(plugin_util.proto_to_json(exp))
    groups_d = json.loads(plugin_util.proto_to_json(groups))
    for g in groups_d.get("sessionGroups", []):  # the clock's times (add_hparams takes none)
        for mv in g.get("metricValues", []):
            mv.pop("wallTimeSecs", None)
        for s in g["sessions"]:
            for k in ("startTimeSecs", "endTimeSecs"):
                s.pop(k, None)
            for mv in s.get("metricValues", []):
                mv.pop("wallTimeSecs", None)
    exp_d.pop("timeCreatedSecs", None)
    return {"experiment": exp_d, "session_groups": groups_d}


def decode_tree(root: str) -> dict[tuple[str, str], Any]:
    """Every (run, tag) of one side, decoded; plus the projector and hparams tabs."""
    m = load_mux(root)
    out: dict[tuple[str, str], Any] = {}
    for run in m.Runs():
        for tag in m.Runs()[run].get("tensors", []):
            md = m.SummaryMetadata(run, tag)
            meta = decode_metadata(md)
            # TensorBoard's loader converts a legacy Summary value (simple_value, image,
            # histo, audio) to a tensor, naming it: display_name=tag, converted_to_tensor.
            # The dashboard shows the same either way, so the two are not told apart.
            if meta["display_name"] == tag:
                meta["display_name"] = ""
            if isinstance(meta["content"], dict):
                meta["content"].pop("converted_to_tensor", None)
            if meta["plugin"] == hp_metadata.PLUGIN_NAME:
                meta["content"] = decode_hparams_content(tag, md.plugin_data.content)
            events = [(e.step, None if (tag in _CLOCK_TAGS or run in _CLOCK_RUNS) else e.wall_time,
                       decode_value(meta["plugin"], tag, tensor_util.make_ndarray(e.tensor_proto)))
                      for e in m.Tensors(run, tag)]
            if tag == cs_metadata.CONFIG_SUMMARY_TAG:  # one key per call (three methods write it)
                for i, ev in enumerate(events):
                    out[(run, f"{tag}#{i}")] = Decoded(meta, [ev])
            else:
                out[(run, tag)] = Decoded(meta, events)
    out[(RUN, "projector")] = projector_view(m, root)
    out[(".", "hparams_tab")] = hparams_tab(m, root)
    return out


def differences(a: Any, b: Any, path: str = "", out: list[str] | None = None) -> list[str]:
    """Where two decoded values differ (exactly: same dtype, shape and values; NaN
    equals NaN), as readable paths; empty when they are equal."""
    out = [] if out is None else out
    if len(out) >= 12:
        return out
    if dataclasses.is_dataclass(a) and dataclasses.is_dataclass(b):
        return differences(dataclasses.asdict(a), dataclasses.asdict(b), path, out)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a_arr, b_arr = np.asarray(a), np.asarray(b)
        if a_arr.dtype != b_arr.dtype or a_arr.shape != b_arr.shape:
            out.append(f"{path}: {a_arr.dtype}{a_arr.shape} != {b_arr.dtype}{b_arr.shape}")
        elif not np.array_equal(a_arr, b_arr, equal_nan=a_arr.dtype.kind in "fc"):
            bad = np.argwhere(a_arr != b_arr) if a_arr.ndim else np.zeros((1, 0), int)
            first = tuple(bad[0]) if len(bad) else ()
            out.append(f"{path}: {len(bad)} of {a_arr.size} values differ, first at {first}: "
                       f"{a_arr[first]!r} != {b_arr[first]!r}")
        return out
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            if k not in a or k not in b:
                out.append(f"{path}.{k}: only in {'ours' if k in a else 'torch'}: "
                           f"{str(a.get(k, b.get(k)))[:200]}")
            else:
                differences(a[k], b[k], f"{path}.{k}", out)
        return out
    if isinstance(a, tuple) and isinstance(b, tuple) and path.endswith(".shape"):
        if a != b:
            out.append(f"{path}: {a} != {b}")
        return out
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            out.append(f"{path}: {len(a)} items != {len(b)}")
        for i, (x, y) in enumerate(zip(a, b)):
            differences(x, y, f"{path}[{i}]", out)
        return out
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return out
    if a != b or type(a) is not type(b):
        out.append(f"{path}: {str(a)[:300]!r} != {str(b)[:300]!r}")
    return out


# ---------------------------------------------------------------------------
# the two sides, written once per module
# ---------------------------------------------------------------------------

def writer_under_test() -> type:
    """summarylog.SummaryWriter; torch's own with SLG_SW_UNDER_TEST=torch (harness check)."""
    if os.environ.get("SLG_SW_UNDER_TEST", "") == "torch":
        from torch.utils.tensorboard import SummaryWriter as TorchWriter

        return TorchWriter
    return summarylog.SummaryWriter


@pytest.fixture(scope="module", autouse=True)
def _runtime() -> Any:
    t0 = time.perf_counter()
    yield
    print(f"\ntest_summary_writer_tb: {time.perf_counter() - t0:.1f} s in all "
          f"(both sides written, decoded in process, served by two TensorBoard servers)")


@dataclasses.dataclass
class Sides:
    root: str
    inputs: Inputs
    errors: dict[str, dict[str, str]]            # side -> {method: error}
    decoded: dict[str, dict[tuple[str, str], Any]]  # side -> {(run, tag): decoded}
    keys: dict[str, list[tuple[str, str]]]


@pytest.fixture(scope="module")
def sides(tmp_path_factory: pytest.TempPathFactory) -> Sides:
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    root = str(tmp_path_factory.mktemp("sw_tb"))
    onnx_path = _onnx_model(str(tmp_path_factory.mktemp("onnx_model") / "small.onnx"))
    inp = make_inputs()
    errors, decoded = {}, {}
    t0 = time.perf_counter()
    for side, cls in (("torch", TorchWriter), ("ours", writer_under_test())):
        errors[side] = log_everything(cls, os.path.join(root, side), inp, onnx_path)
        print(f"[{side}] {cls.__module__}.{cls.__name__}: raised in {sorted(errors[side])}")
    t1 = time.perf_counter()
    assert not errors["torch"], f"the oracle itself failed: {errors['torch']}"
    for side in ("torch", "ours"):
        decoded[side] = decode_tree(os.path.join(root, side))
    print(f"written both sides in {t1 - t0:.1f} s, decoded in process in {time.perf_counter() - t1:.1f} s")
    return Sides(root, inp, errors, decoded, _keys_of(inp))


def test_every_method_is_covered() -> None:
    public = {n for n in dir(summarylog.SummaryWriter) if n.startswith("add_")}
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    torch_public = {n for n in dir(TorchWriter) if n.startswith("add_")}
    # add_event/add_summary are the file writer's plumbing, add_openvino_graph is tensorboardX's
    plumbing = {"add_event", "add_summary", "add_openvino_graph"}
    assert set(METHODS) == (torch_public - plumbing), sorted(torch_public ^ set(METHODS))
    assert set(METHODS) <= public or writer_under_test() is not summarylog.SummaryWriter, \
        f"missing on summarylog.SummaryWriter: {sorted(set(METHODS) - public)}"


def test_same_runs_and_tags(sides: Sides) -> None:
    """Ours writes the runs and tags torch writes, no more, no fewer."""
    ours, theirs = set(sides.decoded["ours"]), set(sides.decoded["torch"])
    assert ours == theirs, f"only ours: {sorted(ours - theirs)}; only torch: {sorted(theirs - ours)}"


def as_torch_bools(x: Any) -> Any:
    """An hparams record with bools encoded as torch's add_hparams encodes them (1.0/0.0,
    FLOAT64).  summarylog keeps a bool a bool, on purpose and documented (README's
    migration table: "a bool stays a bool (torch writes 1.0)"): the one difference
    from torch this test accepts, and only in add_hparams' records."""
    if isinstance(x, bool):
        return float(x)
    if x == "DATA_TYPE_BOOL":
        return "DATA_TYPE_FLOAT64"
    if isinstance(x, dict):
        return {k: as_torch_bools(v) for k, v in x.items()}
    if isinstance(x, list):
        return [as_torch_bools(v) for v in x]
    if dataclasses.is_dataclass(x):
        return as_torch_bools(dataclasses.asdict(x))
    return x


@pytest.mark.parametrize("method", METHODS)
def test_parity_with_torch(sides: Sides, method: str) -> None:
    """The same call on torch's SummaryWriter and on ours: the same tags, metadata and
    decoded values (pixels, samples, arrays, graph nodes) in TensorBoard's backend."""
    assert method not in sides.errors["ours"], f"{method} raised: {sides.errors['ours'][method]}"
    problems = []
    for key in sides.keys[method]:
        theirs = sides.decoded["torch"].get(key)
        assert theirs is not None, f"harness: torch wrote no {key}"
        ours = sides.decoded["ours"].get(key)
        if ours is None:
            problems.append(f"{key}: missing in ours")
            continue
        if method == "add_hparams":
            ours = as_torch_bools(ours)
            theirs = as_torch_bools(theirs)
        problems += [f"{key}{d}" for d in differences(ours, theirs)]
    assert not problems, f"{method} differs from torch's:\n  " + "\n  ".join(problems)


def test_differences_sees_a_change() -> None:
    """The comparison itself: equal trees pass, any changed pixel, dtype, key or
    string is reported."""
    a = {"x": [np.arange(6, dtype=np.uint8).reshape(2, 3), "s", 1.5], "y": {"z": b"b"}}
    b = {"x": [np.arange(6, dtype=np.uint8).reshape(2, 3), "s", 1.5], "y": {"z": b"b"}}
    assert differences(a, b) == []
    b["x"][0][1, 2] = 9
    assert "1 of 6 values differ" in differences(a, b)[0]
    b["x"][0] = b["x"][0].astype(np.int16)
    assert "uint8(2, 3) != int16(2, 3)" in differences(a, b)[0]
    assert differences({"k": 1.0}, {"k": 1}) and differences({"k": 1}, {}) and differences([1], [1, 2])
    assert differences(np.float32(1 / 3), np.float64(1 / 3))


# ---------------------------------------------------------------------------
# the real server, over HTTP, as the dashboard queries it
# ---------------------------------------------------------------------------

SIDES = ("torch", "ours")  # the oracle first: a failure on its side is the harness's
PLUGINS = ("scalars", "images", "histograms", "distributions", "text", "graphs", "projector",
           "pr_curves", "custom_scalars", "mesh", "audio", "hparams")


@pytest.fixture(scope="module", params=["false", "true"], ids=["load_fast=false", "load_fast=true"])
def server(request: pytest.FixtureRequest, sides: Sides,
           tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One server per --load_fast mode over <root> (runs ours/... and torch/...)."""
    load_fast = request.param
    if load_fast == "true":
        ok, why = _data_server_usable()
        require(ok, f"TensorBoard's data server (tensorboard_data_server) for --load_fast=true: {why}")
    log_path = str(tmp_path_factory.mktemp(f"sw_tb_server_{load_fast}") / "tensorboard.log")
    t0 = time.perf_counter()
    srv = _start_server(sides.root, load_fast, log_path)
    # torch's runs and ours' main run (a missing run of ours fails in its own test)
    want = {f"torch/{r}" for r in (RUN, ONNX_RUN, f"{RUN}/{HP_RUN}")} | {f"ours/{RUN}"}
    runs = srv.eventually(lambda: srv.json("/data/runs"), lambda r: want <= set(r))
    print(f"tensorboard --load_fast={load_fast}: serving {len(runs)} runs after "
          f"{time.perf_counter() - t0:.1f} s")
    try:
        yield srv
    finally:
        _stop(srv.proc)


def _fetch(server: Server, path: str, params: dict[str, Any], done: Callable[[Any], bool],
           raw: bool = False) -> Any:
    """Poll a route until ``done`` (the server loads in the background); bounded."""
    got = server.eventually((lambda: server.get(path, params)) if raw else
                            (lambda: server.json(path, params)), done)
    assert done(got), f"{path} {params}: {str(got)[:800]}\n{server.log()}"
    return got


def _f32(x: float) -> float:
    return float(np.float32(x))


def test_server_plugins_listing(server: Server) -> None:
    listing = server.eventually(lambda: server.json("/data/plugins_listing"),
                                lambda p: all(p.get(k, {}).get("enabled") for k in PLUGINS))
    off = [k for k in PLUGINS if not listing.get(k, {}).get("enabled")]
    assert not off, f"plugins not enabled: {off}\n{server.log()}"


def test_server_scalars(sides: Sides, server: Server) -> None:
    inp = sides.inputs
    for side in SIDES:
        want: dict[tuple[str, str], list[list[float]]] = {}
        for tag, points in inp.scalars.items():  # float32 as TensorBoard keeps it, float64 asked for
            cast = (lambda v: v) if tag == "scalar/double" else _f32
            want[(f"{side}/{RUN}", tag)] = [[T0 + s, s, cast(v)] for s, v in points]
        for main_tag, groups in inp.scalars_groups.items():
            for key, points in groups.items():
                run = f"{side}/{RUN}/{main_tag.replace('/', '_')}_{key}"
                want[(run, main_tag)] = [[T0 + s, s, _f32(v)] for s, v in points]
        double = want.pop((f"{side}/{RUN}", "scalar/double"))
        for (run, tag), points in want.items():
            got = _fetch(server, "/data/plugin/scalars/scalars", {"run": run, "tag": tag},
                         lambda g, n=len(points): isinstance(g, list) and len(g) >= n)
            assert got == points, (run, tag, got, points)
        if server.load_fast == "true":
            # the Rust data server lists no float64 scalar (torch's double_precision one neither)
            tags = server.json("/data/plugin/scalars/tags")[f"{side}/{RUN}"]
            assert "scalar/double" not in tags, (side, tags)
            print(f"[{side}] load_fast=true: scalar/double (float64) not served, as for torch's")
        else:
            got = _fetch(server, "/data/plugin/scalars/scalars", {"run": f"{side}/{RUN}", "tag": "scalar/double"},
                         lambda g: isinstance(g, list) and len(g) >= 1)
            assert got == double, (side, got, double)
        # add_hparams' metrics are scalars of its sub-run (wall time from the clock)
        for tag, v in inp.metrics.items():
            got = _fetch(server, "/data/plugin/scalars/scalars", {"run": f"{side}/{RUN}/{HP_RUN}", "tag": tag},
                         lambda g: isinstance(g, list) and len(g) >= 1)
            assert [(s, x) for _, s, x in got] == [(21, _f32(v))], (side, tag, got)


HIST_TAGS = {"hist/int_bins": 5, "hist/tensorflow": 6, "hist/auto": 7, "hist/fd": 7, "hist/max_bins": 7,
             "hist/raw": 8}  # tag -> step


def test_server_histograms_and_distributions(sides: Sides, server: Server) -> None:
    inp = sides.inputs
    values = inp.histogram_values
    views: dict[str, Any] = {}
    for side in SIDES:
        run = f"{side}/{RUN}"
        tags = _fetch(server, "/data/plugin/histograms/tags", {},
                      lambda t: set(HIST_TAGS) <= set(t.get(run, {})))
        assert set(tags[run]) == set(HIST_TAGS), (side, tags[run])
        for tag, want_step in HIST_TAGS.items():
            (wall, step, buckets), = _fetch(server, "/data/plugin/histograms/histograms",
                                            {"run": run, "tag": tag},
                                            lambda g: isinstance(g, list) and len(g) >= 1)
            assert step == want_step, (side, tag, step)
            assert wall == T0 + step
            counts = [c for _, _, c in buckets]
            if tag == "hist/raw":
                assert sum(counts) == inp.histogram_raw["num"], (side, buckets)
                assert [r for _, r, _ in buckets][-1] == inp.histogram_raw["max"], (side, buckets)
            else:
                assert sum(counts) == values.size, (side, tag, buckets)
                # the outer edges come from the data's min and max (float32 in the Python loader)
                assert buckets[0][0] == pytest.approx(values.min(), rel=1e-6), (side, tag, buckets[0])
                assert buckets[-1][1] == pytest.approx(values.max(), rel=1e-6), (side, tag, buckets[-1])
                assert all(a[1] <= b[0] for a, b in zip(buckets, buckets[1:])), (side, tag)
            dist = _fetch(server, "/data/plugin/distributions/distributions", {"run": run, "tag": tag},
                          lambda g: isinstance(g, list) and len(g) >= 1)
            (dwall, dstep, points), = dist
            assert (dwall, dstep) == (wall, step)
            assert [bp for bp, _ in points] == list(compressor.NORMAL_HISTOGRAM_BPS)
            vs = [v for _, v in points]
            assert vs == sorted(vs), (side, tag, points)
            views[side + tag] = (buckets, points)
    for tag in HIST_TAGS:
        assert views["ours" + tag] == views["torch" + tag], f"{tag}: ours and torch's histograms differ"


def _image_entries(server: Server, run: str, tag: str, sample: int = 0) -> list[dict[str, Any]]:
    return _fetch(server, "/data/plugin/images/images", {"run": run, "tag": tag, "sample": sample},
                  lambda g: isinstance(g, list) and len(g) >= 1)


def _individual_image(server: Server, entry: dict[str, Any]) -> dict[str, Any]:
    return decode_image(server.get("/data/plugin/images/individualImage?" + entry["query"]))


def _expected_u8(x: np.ndarray) -> np.ndarray:
    """The peers' float -> 8 bits: x * 255 in float32, clipped, truncated."""
    return (x.astype(np.float32) * 255).clip(0, 255).astype(np.uint8)


def _grid(nchw: np.ndarray, ncols: int) -> np.ndarray:
    """The peers' add_images / sprite grid: up to ``ncols`` per row, no padding, HWC."""
    n, c, h, w = nchw.shape
    ncols = min(n, ncols)
    nrows = math.ceil(n / ncols)
    out = np.zeros((nrows * h, ncols * w, c), nchw.dtype)
    for i in range(n):
        y, x = divmod(i, ncols)
        out[y * h:(y + 1) * h, x * w:(x + 1) * w] = nchw[i].transpose(1, 2, 0)
    return out


IMAGE_TAGS = {"image/chw_uint8": 9, "image/hwc_float": 9, "image/gray": 9, "images/batch": 10,
              "images/nhwc_float": 10, "image/boxes": 11, "figure/one": 12, "figure/list": 13, "video": 14,
              "video/clips": 14}


def test_server_images(sides: Sides, server: Server) -> None:
    inp = sides.inputs
    expected = {
        "image/chw_uint8": inp.image_chw.transpose(1, 2, 0),
        "image/hwc_float": _expected_u8(inp.image_hwc_float),
        "images/batch": _grid(inp.images_nchw, 8),
        "images/nhwc_float": _grid(_expected_u8(inp.images_nhwc_float).transpose(0, 3, 1, 2), 8),
        "image/gray": np.repeat(_expected_u8(inp.image_gray).transpose(1, 2, 0), 3, axis=2),
    }
    views: dict[str, dict[str, Any]] = {}
    for side in SIDES:
        run = f"{side}/{RUN}"
        tags = _fetch(server, "/data/plugin/images/tags", {}, lambda t: set(IMAGE_TAGS) <= set(t.get(run, {})))
        assert set(tags[run]) == set(IMAGE_TAGS), (side, sorted(tags[run]))
        views[side] = {}
        for tag, step in IMAGE_TAGS.items():
            assert tags[run][tag]["samples"] == 1, (side, tag, tags[run][tag])
            (entry,) = _image_entries(server, run, tag)
            assert (entry["wall_time"], entry["step"]) == (T0 + step, step), (side, tag, entry)
            img = _individual_image(server, entry)
            views[side][tag] = img
            if tag in expected:
                assert img["format"] == "PNG"
                np.testing.assert_array_equal(img["pixels"], expected[tag], err_msg=f"{side} {tag}")
            elif tag == "video/clips":  # 3 clips padded to 4, tiled in one row, a GIF frame per time step
                assert img["format"] == "GIF" and len(img["frames"]) == 2, (side, img["format"])
                assert img["frames"][0].shape == (6, 4 * 5, 3), (side, img["frames"][0].shape)
            elif tag == "video":  # a GIF of the T frames; few colours, so its palette is exact
                assert img["format"] == "GIF", (side, img["format"])
                want = inp.video[0].transpose(0, 2, 3, 1)
                assert len(img["frames"]) == len(want), (side, len(img["frames"]))
                np.testing.assert_array_equal(np.stack(img["frames"]), want, err_msg=side)
                timed = decode_image(server.get("/data/plugin/images/individualImage?" + entry["query"]), True)
                print(f"[{side}] GIF frame durations {timed['durations']} ms, loop {timed['loop']}")
            else:  # rendered (boxes, figures): a real picture, compared with torch's below
                px = img["pixels"]
                assert px.ndim == 3 and px.shape[2] in (3, 4) and px.std() > 0, (side, tag, px.shape)
    for tag in IMAGE_TAGS:
        d = differences(views["ours"][tag], views["torch"][tag])
        assert not d, f"{tag}: ours and torch's pixels differ: {d}"


def test_server_audio(sides: Sides, server: Server) -> None:
    inp = sides.inputs
    want = (inp.audio[0] * np.iinfo(np.int16).max).astype("<i2")  # the peers' float -> PCM16
    views = {}
    for side in SIDES:
        run = f"{side}/{RUN}"
        tags = _fetch(server, "/data/plugin/audio/tags", {}, lambda t: "audio" in t.get(run, {}))
        assert tags[run]["audio"]["samples"] == 1, tags[run]
        (entry,) = _fetch(server, "/data/plugin/audio/audio", {"run": run, "tag": "audio", "sample": 0},
                          lambda g: isinstance(g, list) and len(g) >= 1)
        assert (entry["wall_time"], entry["step"]) == (T0 + 15, 15), entry
        # the Rust data server (load_fast=true) serves torch's legacy audio untyped
        assert entry["contentType"] in ("audio/wav", "application/octet-stream"), entry
        views[side] = (entry["contentType"], entry["label"])
        wav = decode_wav(server.get("/data/plugin/audio/individualAudio?" + entry["query"]))
        assert (wav["rate"], wav["channels"]) == (inp.audio_rate, 1), (side, wav)
        np.testing.assert_array_equal(wav["samples"], want, err_msg=side)
    assert views["ours"] == views["torch"], views


def test_server_text(sides: Sides, server: Server) -> None:
    views = {}
    for side in SIDES:
        run = f"{side}/{RUN}"
        want_tags = {f"{t}/text_summary" for t in sides.inputs.texts}
        tags = _fetch(server, "/data/plugin/text/tags", {}, lambda t: want_tags <= set(t.get(run, [])))
        assert set(tags[run]) == want_tags, (side, tags[run])
        for i, (tag, text) in enumerate(sides.inputs.texts.items()):
            (entry,) = _fetch(server, "/data/plugin/text/text", {"run": run, "tag": f"{tag}/text_summary"},
                              lambda g: isinstance(g, list) and len(g) >= 1)
            assert (entry["wall_time"], entry["step"]) == (T0 + 16 + i, 16 + i), (side, entry)
            assert plugin_util.markdown_to_safe_html(text.encode()) in entry["text"], (side, entry)
            # the peers log a [1] string tensor: the text tab draws it as a one-cell table
            want = text_plugin.text_array_to_html(np.array([text.encode()], dtype=object), True)
            assert entry["text"] == want, f"{side} {tag}: shows {entry['text']!r}, torch's layout is {want!r}"
            views[(side, tag)] = entry["text"]
    for tag in sides.inputs.texts:
        assert views[("ours", tag)] == views[("torch", tag)], \
            f"{tag}: ours shows {views[('ours', tag)]!r}, torch's {views[('torch', tag)]!r}"


def _graph(server: Server, run: str) -> Any:
    pbtxt = _fetch(server, "/data/plugin/graphs/graph", {"run": run, "conceptual": "false"},
                   lambda g: isinstance(g, bytes) and b"node" in g, raw=True)
    return text_format.Parse(pbtxt.decode(), graph_pb2.GraphDef())


def test_server_graphs(server: Server) -> None:
    info = _fetch(server, "/data/plugin/graphs/info", {},
                  lambda i: all(f"{s}/{r}" in i for s in SIDES for r in (RUN, ONNX_RUN)))
    graphs = {}
    for side in SIDES:
        assert info[f"{side}/{RUN}"]["run_graph"], (side, info[f"{side}/{RUN}"])
        g = _graph(server, f"{side}/{RUN}")
        names = [n.name for n in g.node]
        assert any("conv" in n for n in names) and any("fc" in n for n in names), (side, names)
        assert any(n.op == "aten::_convolution" for n in g.node), (side, {n.op for n in g.node})
        onnx_g = _graph(server, f"{side}/{ONNX_RUN}")
        assert {"MatMul", "Add", "Relu"} <= {n.op for n in onnx_g.node}, (side, onnx_g)
        meta = _fetch(server, "/data/plugin/graphs/run_metadata", {"run": f"{side}/{RUN}", "tag": "step1"},
                      lambda m: isinstance(m, bytes) and len(m) > 0, raw=True)
        graphs[side] = (_message(g), _message(onnx_g), meta)
    d = differences(graphs["ours"], graphs["torch"])
    assert not d, f"ours and torch's graphs differ: {d}"


def test_server_projector(sides: Sides, server: Server) -> None:
    inp = sides.inputs
    runs = _fetch(server, "/data/plugin/projector/runs", {},
                  lambda r: isinstance(r, list) and all(f"{s}/{RUN}" in r for s in SIDES))
    want_sprite = np.zeros((16, 16, 3), np.uint8)  # 12 4x4 images, 4 per row, in a square canvas
    grid = _grid(_expected_u8(inp.embedding_imgs), 4)
    want_sprite[:grid.shape[0], :grid.shape[1]] = grid
    views = {}
    for side in SIDES:
        run = f"{side}/{RUN}"
        assert run in runs
        info = _fetch(server, "/data/plugin/projector/info", {"run": run},
                      lambda i: isinstance(i, dict) and len(i.get("embeddings", [])) >= 2)
        embs = {e["tensorName"]: e for e in info["embeddings"]}
        assert set(embs) == {"emb:00017", "emb2:00018"}, (side, sorted(embs))
        views[side] = {}
        for name, mat, want_meta in (
                ("emb:00017", inp.embedding, inp.embedding_meta),
                ("emb2:00018", inp.embedding * 2,
                 ["name\tparity"] + ["\t".join(row) for row in inp.embedding2_meta])):
            emb = embs[name]
            assert emb["tensorShape"] == [12, 4], (side, emb)
            tensor = np.frombuffer(server.get("/data/plugin/projector/tensor", {"run": run, "name": name}),
                                   "<f4")
            np.testing.assert_array_equal(tensor.reshape(12, 4), mat, err_msg=f"{side} {name}")
            meta = server.get("/data/plugin/projector/metadata", {"run": run, "name": name}).decode()
            assert meta.splitlines() == want_meta, (side, name, meta)
            view = [{k: v for k, v in emb.items() if not k.endswith("Path")}, tensor, meta]
            if name == "emb:00017":
                assert emb["sprite"]["singleImageDim"] == [4, 4], (side, emb)
                sprite = decode_image(server.get("/data/plugin/projector/sprite_image",
                                                 {"run": run, "name": name}))
                np.testing.assert_array_equal(sprite["pixels"], want_sprite, err_msg=side)
                view.append(sprite)
            else:
                assert "sprite" not in emb, (side, emb)
            views[side][name] = view
    d = differences(views["ours"], views["torch"])
    assert not d, f"ours and torch's projector tabs differ: {d}"


def test_server_pr_curves(sides: Sides, server: Server) -> None:
    raw = sides.inputs.pr_raw
    labels = sides.inputs.pr_labels
    views = {}
    for side in SIDES:
        run = f"{side}/{RUN}"
        tags = _fetch(server, "/data/plugin/pr_curves/tags", {},
                      lambda t: {"pr/curve", "pr/weighted", "pr/raw"} <= set(t.get(run, {})))
        assert set(tags[run]) == {"pr/curve", "pr/weighted", "pr/raw"}, tags[run]
        for tag, step, n in (("pr/curve", 18, 11), ("pr/weighted", 18, 127), ("pr/raw", 19, 5)):
            got = _fetch(server, "/data/plugin/pr_curves/pr_curves", {"run": run, "tag": tag},
                         lambda g: isinstance(g, dict) and len(g.get(run, [])) >= 1)
            (entry,) = got[run]
            assert (entry["wall_time"], entry["step"]) == (T0 + step, step), (side, tag, entry)
            tp, fp, tn, fn = (np.array(entry[k]) for k in ("true_positives", "false_positives",
                                                            "true_negatives", "false_negatives"))
            # the plugin drops the trailing thresholds nothing is predicted above
            assert 1 <= len(tp) <= n and len(entry["thresholds"]) == len(tp), (side, tag, entry)
            if tag == "pr/raw":
                for k, v in (("true_positives", tp), ("false_positives", fp), ("true_negatives", tn),
                             ("false_negatives", fn)):
                    np.testing.assert_array_equal(v, raw[k[:-1] + "_counts"][:len(v)], err_msg=side)
                k = len(tp)
                np.testing.assert_array_equal(entry["precision"], raw["precision"][:k].astype(np.float32))
                np.testing.assert_array_equal(entry["recall"], raw["recall"][:k].astype(np.float32))
            elif tag == "pr/weighted":  # counts are sums of weights, which the route truncates to ints
                w = sides.inputs.pr_weights.astype(np.float64)
                assert tp[0] == int(w[labels == 1].sum()) and fp[0] == int(w[labels == 0].sum()), \
                    (side, entry)
            else:  # every threshold splits all 60 examples; positives are the labels' ones
                assert (tp + fp + tn + fn == labels.size).all(), (side, entry)
                assert (tp + fn == labels.sum()).all(), (side, entry)
                assert tp[0] == labels.sum() and tn[0] == 0, (side, entry)
            views[(side, tag)] = {k: v for k, v in entry.items() if k != "wall_time"}
    for tag in ("pr/curve", "pr/weighted", "pr/raw"):
        d = differences(views[("ours", tag)], views[("torch", tag)])
        assert not d, f"{tag}: ours and torch's pr curves differ: {d}"


def test_server_custom_scalars(sides: Sides, server: Server) -> None:
    layout = _fetch(server, "/data/plugin/custom_scalars/layout", {},
                    lambda lo: isinstance(lo, dict) and len(lo.get("category", [])) >= 2)
    # every run's layout is merged; each side's last layout is add_custom_scalars' one
    got = {c["title"]: {ch["title"]: ch for ch in c["chart"]} for c in layout["category"]}
    assert set(got) == set(sides.inputs.layout), layout
    for cat, charts in sides.inputs.layout.items():
        assert set(got[cat]) == set(charts), (cat, got[cat])
        for title, (kind, tags) in charts.items():
            chart = got[cat][title]
            if kind == "Multiline":
                assert chart["multiline"]["tag"] == tags, chart
            else:
                (series,) = chart["margin"]["series"]  # [value, lower, upper]
                assert [series["value"], series["lower"], series["upper"]] == tags, chart
    for side in SIDES:  # the charts' data route: the tags' scalars by regex
        got = _fetch(server, "/data/plugin/custom_scalars/scalars",
                     {"run": f"{side}/{RUN}", "tag": "scalar/plain"},
                     lambda g: isinstance(g, dict) and g.get("tag_to_events", {}).get("scalar/plain"))
        assert got["regex_valid"] and got["tag_to_events"]["scalar/plain"] == [[T0, 0, _f32(0.1234)]], got


def test_server_mesh(sides: Sides, server: Server) -> None:
    mesh = sides.inputs.mesh
    views = {}
    for side in SIDES:
        run = f"{side}/{RUN}"
        tags = _fetch(server, "/data/plugin/mesh/tags", {}, lambda t: "mesh" in t.get(run, {}))
        assert set(tags[run]) == {"mesh"}, tags[run]
        metas = _fetch(server, "/data/plugin/mesh/meshes", {"run": run, "tag": "mesh", "sample": 0},
                       lambda g: isinstance(g, list) and len(g) >= 3)
        kind_name = mesh_metadata.plugin_data_pb2.MeshPluginData.ContentType.Name
        by_kind = {kind_name(m["content_type"]): m for m in metas}
        assert set(by_kind) == {"VERTEX", "FACE", "COLOR"}, metas
        for kind, key, dtype in (("VERTEX", "vertices", "<f4"), ("FACE", "faces", "<i4"),
                                 ("COLOR", "colors", "u1")):
            m = by_kind[kind]
            assert (m["wall_time"], m["step"]) == (T0 + 20, 20), (side, m)
            assert m["data_shape"] == list(mesh[key].shape), (side, m)
            assert json.loads(m["config"]) == sides.inputs.mesh_config, (side, m)
            data = server.get("/data/plugin/mesh/data", {"run": run, "tag": "mesh", "sample": 0,
                                                          "content_type": kind, "step": 20})
            arr = np.frombuffer(data, dtype).reshape(mesh[key].shape)
            np.testing.assert_array_equal(arr, mesh[key], err_msg=f"{side} {kind}")
            views[(side, kind)] = ({k: (json.loads(v) if k == "config" else v)
                                    for k, v in m.items() if k != "wall_time"}, arr)
    for kind in ("VERTEX", "FACE", "COLOR"):
        d = differences(views[("ours", kind)], views[("torch", kind)])
        assert not d, f"mesh {kind}: ours and torch's differ: {d}"


def test_server_hparams(sides: Sides, server: Server) -> None:
    inp = sides.inputs
    sessions_want = {f"{side}/{RUN}/{HP_RUN}" for side in SIDES}


    def complete(r: Any) -> bool:
        if not isinstance(r, tuple):
            return False
        sessions = [s for g in r[1].get("sessionGroups", []) for s in g["sessions"]]
        return ({s["name"] for s in sessions} >= sessions_want
                and all(len(s.get("metricValues", [])) >= len(inp.metrics) for s in sessions))

    got = server.eventually(server.hparams_tab, complete)
    assert complete(got), got
    exp, groups = got
    infos = {i["name"]: i for i in exp["hparamInfos"]}
    assert set(infos) == set(inp.hparams), infos
    assert infos["optimizer"]["domainDiscrete"] == ["adam", "sgd"], infos["optimizer"]
    assert sorted(infos["batch_norm"]["domainDiscrete"]) == [False, True], infos["batch_norm"]
    # the experiment lists exactly the given metrics
    assert {i["name"]["tag"] for i in exp["metricInfos"]} == set(inp.metrics), exp["metricInfos"]
    sessions = {s["name"]: (g, s) for g in groups["sessionGroups"] for s in g["sessions"]}
    assert set(sessions) == sessions_want, sorted(sessions)
    for name, (group, session) in sessions.items():
        want_hp = {k: (float(v) if isinstance(v, int) and not isinstance(v, bool) else v)
                   for k, v in inp.hparams.items()}
        assert group["hparams"] == want_hp, (name, group["hparams"])
        assert session["status"] == "STATUS_SUCCESS", session
        mv = {m["name"]["tag"]: m for m in session["metricValues"]}
        for tag, v in inp.metrics.items():
            assert mv[tag]["value"] == _f32(v) and int(mv[tag]["trainingStep"]) == 21, (name, mv[tag])
    # the same values of the same types for both sides (a bool: see as_torch_bools)
    d = differences(as_torch_bools(sessions[f"ours/{RUN}/{HP_RUN}"][0]["hparams"]),
                    sessions[f"torch/{RUN}/{HP_RUN}"][0]["hparams"])
    assert not d, f"the HParams tab shows ours' hparams unlike torch's: {d}"
