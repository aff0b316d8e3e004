"""What a person sees: headless Chromium screenshots of TensorBoard's Images and Mesh
dashboards over a TensorBoard-dialect landscape (WebGL through SwiftShader, no GPU).
The contour image shows with its colours; the mesh is drawn (surface colours and the
red path markers on the canvas).  Chromium comes from ``./dev test`` (apt, as root);
where it is missing the tests skip, and fail under CI."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess

import numpy as np
import pytest

from conftest import require, require_module

require_module("tensorboard")
Image = require_module("PIL.Image")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(autouse=True)
def _chromium() -> None:
    require(CHROMIUM is not None, "chromium (apt-get install chromium)")


from summarylog.dialects.landscape_png import PATH_COLOR  # noqa: E402
from summarylog.landscape import write_landscapes  # noqa: E402
from tb_server import _start_server, _stop  # noqa: E402
from test_landscape_tensorboard import _big  # noqa: E402


def _screenshot(url: str, out: str) -> np.ndarray:
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--use-angle=swiftshader",
           "--enable-unsafe-swiftshader", "--window-size=1300,1000",
           "--virtual-time-budget=25000", f"--screenshot={out}", url]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL, start_new_session=True,
                            cwd=os.path.dirname(out))
    try:
        proc.wait(timeout=120)
    finally:
        try:  # chromium's helpers (zygote, GPU process) too
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
    assert os.path.exists(out), f"chromium wrote no screenshot ({proc.returncode})"
    return np.asarray(Image.open(out).convert("RGB"))


def test_dashboards_show_the_landscape(tmp_path):
    root = tmp_path / "logs"
    write_landscapes(root / "run", [_big()], format="tensorboard")
    srv = _start_server(str(root), "false", str(tmp_path / "tensorboard.log"))
    try:
        srv.eventually(lambda: srv.json("/data/plugin/mesh/tags"), lambda t: "run" in t)
        images = _screenshot(f"{srv.base}/#images", str(tmp_path / "images.png"))
        mesh = _screenshot(f"{srv.base}/#mesh", str(tmp_path / "mesh.png"))
    finally:
        _stop(srv.proc)
    card = images[100:, 330:]  # below the header, right of the sidebar
    path_px = int((card == PATH_COLOR).all(-1).sum())
    yellow = int((card == (250, 230, 35)).all(-1).sum())  # the colour bar's top, high loss
    assert path_px > 100 and yellow > 20, (path_px, yellow)
    canvas = mesh[100:, 330:].astype(np.int64)
    red = int(((canvas[..., 0] > 170) & (canvas[..., 1] < 90) & (canvas[..., 2] < 90)).sum())
    spread = canvas.max(-1) - canvas.min(-1)  # saturated pixels: the coloured surface
    surface = int((spread > 80).sum())
    assert red > 50 and surface > 20_000, (red, surface)
    print(f"screenshots: Images dashboard {path_px} path pixels, {yellow} colour-bar pixels; "
          f"Mesh dashboard {surface} surface pixels, {red} path-marker pixels "
          f"({tmp_path / 'images.png'}, {tmp_path / 'mesh.png'})")
