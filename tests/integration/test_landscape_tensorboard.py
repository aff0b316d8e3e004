"""TensorBoard itself shows summarylog's loss landscapes: its mesh plugin serves the
surface (tags, meshes, data routes: the vertices, faces and colours we wrote, to the
byte) and its images plugin the contour image, in process and through the real
server (``--load_fast=false`` and ``=true``).  The landscapes are MindSpore 2.10's
own (tests/data/ms210_landscape) written in the TensorBoard dialect, plus a bigger one."""

from __future__ import annotations

import importlib.util
import json
import pathlib
from typing import Any

import numpy as np
import pytest

from conftest import IN_CI, require

if importlib.util.find_spec("tensorboard") is None:
    if IN_CI:
        raise ImportError("tensorboard is required under CI but missing")
    pytest.skip("tensorboard not available", allow_module_level=True)

from tensorboard.plugins.image import images_plugin  # noqa: E402
from tensorboard.plugins.mesh import mesh_plugin  # noqa: E402
from werkzeug.test import Client  # noqa: E402

from summarylog.dialects import tb_landscape  # noqa: E402
from summarylog.dialects.landscape_png import contour_image  # noqa: E402
from summarylog.landscape import Landscape, write_landscapes  # noqa: E402
from summarylog.png import encode_png  # noqa: E402
from summarylog.reader import Reader  # noqa: E402
from tb_server import (  # noqa: E402
    Server,
    _data_server_usable,
    _start_server,
    _stop,
    plugin_context,
)

MS_RUN = pathlib.Path(__file__).resolve().parent.parent / "data" / "ms210_landscape"
DTYPES = {"VERTEX": np.float32, "FACE": np.int32, "COLOR": np.uint8}


def _big() -> Landscape:
    n, t = 40, 9
    s = np.linspace(0.0, 1.0, t)
    px, py = 1.2 * (1 - s) ** 1.5 * np.cos(3 * s), 0.9 * (1 - s) * np.sin(4 * s)
    x = np.linspace(px.min() - 0.3, px.max() + 0.3, n)
    y = np.linspace(py.min() - 0.3, py.max() + 0.3, n)
    gx, gy = np.meshgrid(x, y)
    z = np.log1p(3 * gx ** 2 + gy ** 2 + 0.5 * np.sin(5 * gx) * np.cos(3 * gy) + 1)
    return Landscape("landscape_[1, 9]", x, y, z, intervals=list(range(1, 10)), path_x=px,
                     path_y=py, path_z=np.log1p(3 * px ** 2 + py ** 2 + 1))


@pytest.fixture(scope="module")
def logdir(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, Landscape]]:
    root = tmp_path_factory.mktemp("tb_landscapes")
    theirs = Reader(str(MS_RUN)).landscapes(".")
    landscapes = [ls for [(_, ls)] in theirs.values()] + [_big()]
    write_landscapes(root / "run", landscapes, format="tensorboard")
    return str(root), {ls.tag: Landscape.from_message(ls.tag, ls.to_message())
                       for ls in landscapes}


def _get(plugin: Any, route: str, **args: Any) -> Any:
    resp = Client(plugin.get_plugin_apps()[route]).get(route, query_string=args)
    assert resp.status_code == 200, resp.get_data(as_text=True)
    return resp


def _check_mesh(tags: dict[str, Any], metas: dict[str, Any], data: dict[tuple[str, str], bytes],
                want: dict[str, Landscape]) -> None:
    assert set(tags) == set(want)
    assert all(v == {"samples": 1} for v in tags.values())
    for tag, ls in want.items():
        parts = tb_landscape.mesh_parts(ls)
        kinds = sorted(m["content_type"] for m in metas[tag])
        assert kinds == [1, 2, 3], tag  # VERTEX, FACE, COLOR
        for m in metas[tag]:
            assert m["step"] == 0 and m["components"] == 0b1110
            config = json.loads(m["config"])
            assert config["material"]["side"] == 2 and "camera" in config
        for kind, arr in parts.items():
            got = np.frombuffer(data[tag, kind], DTYPES[kind])
            assert np.array_equal(got, arr.reshape(-1)), (tag, kind)


def test_mesh_plugin_in_process(logdir: tuple[str, dict[str, Landscape]]) -> None:
    root, want = logdir
    plugin = mesh_plugin.MeshPlugin(plugin_context(root))
    tags = _get(plugin, "/tags").get_json()["run"]
    metas = {t: _get(plugin, "/meshes", run="run", tag=t).get_json() for t in want}
    data = {(t, k): _get(plugin, "/data", run="run", tag=t, content_type=k, sample=0,
                         step=0).get_data()
            for t in want for k in DTYPES}
    _check_mesh(tags, metas, data, want)


def test_images_plugin_in_process(logdir: tuple[str, dict[str, Landscape]]) -> None:
    root, want = logdir
    plugin = images_plugin.ImagesPlugin(plugin_context(root))
    tags = _get(plugin, "/tags").get_json()["run"]
    assert set(tags) == {f"{t}/contour" for t in want}
    for tag, ls in want.items():
        [entry] = _get(plugin, "/images", run="run", tag=f"{tag}/contour", sample=0).get_json()
        assert entry["step"] == 0
        png = _get(plugin, "/individualImage", **dict(
            p.split("=", 1) for p in entry["query"].split("&"))).get_data()
        assert png == encode_png(contour_image(ls))


@pytest.fixture(scope="module", params=["false", "true"], ids=["load_fast=false", "load_fast=true"])
def server(request: pytest.FixtureRequest, logdir: tuple[str, dict[str, Landscape]],
           tmp_path_factory: pytest.TempPathFactory) -> Any:
    if request.param == "true":
        ok, why = _data_server_usable()
        require(ok, f"TensorBoard's data server for --load_fast=true: {why}")
    log_path = str(tmp_path_factory.mktemp(f"tb_ls_{request.param}") / "tensorboard.log")
    srv = _start_server(logdir[0], request.param, log_path)
    try:
        yield srv
    finally:
        _stop(srv.proc)


def test_server_shows_the_landscapes(logdir: tuple[str, dict[str, Landscape]],
                                     server: Server) -> None:
    _, want = logdir
    listing = server.eventually(lambda: server.json("/data/plugins_listing"),
                                lambda p: p.get("mesh", {}).get("enabled")
                                and p.get("images", {}).get("enabled"))
    assert listing["mesh"]["enabled"] and listing["images"]["enabled"], server.log()
    tags = server.eventually(lambda: server.json("/data/plugin/mesh/tags"),
                             lambda t: set(t.get("run", {})) == set(want))["run"]
    metas = {t: server.json("/data/plugin/mesh/meshes", {"run": "run", "tag": t}) for t in want}
    data = {(t, k): server.get("/data/plugin/mesh/data", {"run": "run", "tag": t,
                                                          "content_type": k, "sample": 0,
                                                          "step": 0})
            for t in want for k in DTYPES}
    _check_mesh(tags, metas, data, want)
    images = server.eventually(lambda: server.json("/data/plugin/images/tags"),
                               lambda t: len(t.get("run", {})) == len(want))["run"]
    assert set(images) == {f"{t}/contour" for t in want}
    for tag, ls in want.items():
        [entry] = server.json("/data/plugin/images/images",
                              {"run": "run", "tag": f"{tag}/contour", "sample": 0})
        png = server.get("/data/plugin/images/individualImage?" + entry["query"])
        assert png == encode_png(contour_image(ls)), tag
    n = sum(len(v) for v in data.values())
    print(f"--load_fast={server.load_fast}: {len(want)} landscapes' meshes ({n} bytes) and "
          f"contour images served as written")
