"""Start a real MindInsight 2.3.1 (its own venv) on 127.0.0.1 over a summary
base dir, query its REST API, stop it (``mindinsight stop --port``, then make
sure no process of it is left).

MindInsight binds ``settings.HOST``, a constant ``127.0.0.1``
(mindinsight/conf/constants.py); ``mindinsight start`` has no host option and
``MINDINSIGHT_HOST`` is not read (only names in conf/defaults.py are), so the
server is loopback-only as started here.  ``start`` runs ``gunicorn`` by name,
so the venv's bin dir goes first on PATH.

REST API (prefix ``/v1/mindinsight``; mindinsight/backend/datavisual/*.py,
backend/lineagemgr/lineage_api.py).  ``train_id`` is the run dir relative to
the base dir with a ``./`` prefix (``"./run1"``; the base dir itself is
``"."``); a UI tag is ``"<tag>/<plugin>"`` (``"loss/scalar"``,
``"w/histogram"``, ``"inputs/image"``, ``"t/tensor"``):

  GET  /datavisual/train-jobs            offset, limit (default 10), train_id
  POST /datavisual/train-job-caches      {"train_ids": [...]}: start loading
  GET  /datavisual/plugins               train_id, manual_update
  GET  /datavisual/single-job            train_id, plugin_name
  GET  /datavisual/scalar/metadata       train_id, tag
  GET  /datavisual/scalars               train_id (repeated), tag (repeated)
  GET  /datavisual/histograms            train_id, tag
  GET  /datavisual/image/metadata        train_id, tag
  GET  /datavisual/image/single-image    train_id, tag, step  -> PNG bytes
  GET  /datavisual/tensors               train_id, tag, step, detail=stats|histogram|data, dims
  GET  /datavisual/graphs/nodes          train_id, tag, name, mode=normal
  GET  /datavisual/graphs/nodes/names    train_id, tag, search, offset, limit
  GET  /datavisual/graphs/single-node    train_id, tag, name
  POST /lineagemgr/lineages              JSON search condition ({} = all runs)
  GET  /datasets/dataset_graph           train_id

Loading is asynchronous: a run is listed once the brief loader has scanned
the base dir (every ``--reload-interval`` s); its data is read only after a
``train-job-caches`` POST, and its ``cache_status`` goes NOT_IN_CACHE ->
CACHING -> CACHED (all files read once).  ``wait_loaded`` does exactly that.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

APP = "mindinsight.backend.application:APP"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _procs() -> dict[int, tuple[int, str]]:
    """pid -> (ppid, cmdline) of every process (Linux /proc)."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", "rb") as f:
                stat = f.read().decode(errors="replace")
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        # the comm field is in parentheses and may hold spaces
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        out[int(d)] = (ppid, cmd)
    return out


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().decode(errors="replace")
        return state[state.rindex(")") + 2] != "Z"
    except OSError:
        return False


class MindInsight:
    """``with MindInsight(venv, base_dir) as mi: mi.get("/datavisual/train-jobs")``.

    ``workspace`` (logs, default a fresh temp dir removed by ``stop``) and
    ``reload_interval`` (seconds, default 1) are passed to ``mindinsight start``."""

    def __init__(self, venv: str | os.PathLike[str], base_dir: str | os.PathLike[str],
                 workspace: str | os.PathLike[str] | None = None, *,
                 reload_interval: int = 1, port: int | None = None) -> None:
        self.venv = pathlib.Path(venv)
        self.base_dir = os.fspath(base_dir)
        self._own_workspace = workspace is None
        self.workspace = (tempfile.mkdtemp(prefix="mindinsight-ws-") if workspace is None
                          else os.fspath(workspace))
        self.reload_interval = reload_interval
        self.port = port or _free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1/mindinsight"
        self.env = {k: v for k, v in os.environ.items()
                    if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
        self.env["PATH"] = f"{self.venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
        self.pids: set[int] = set()
        self.start_seconds = self.stop_seconds = 0.0

    # ----------------------------------------------------------- processes
    def _cli(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(self.venv / "bin" / "mindinsight"), *args], env=self.env,
                              capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)

    def server_pids(self) -> set[int]:
        """The gunicorn master bound to our port and all its descendants."""
        procs = _procs()
        roots = {pid for pid, (_, cmd) in procs.items()
                 if APP in cmd and f"127.0.0.1:{self.port}" in cmd}
        found = set(roots)
        grew = True
        while grew:
            grew = False
            for pid, (ppid, _) in procs.items():
                if ppid in found and pid not in found:
                    found.add(pid)
                    grew = True
        return found

    def start(self, timeout: float = 90) -> "MindInsight":
        t0 = time.monotonic()
        r = self._cli("start", "--summary-base-dir", self.base_dir, "--port", str(self.port),
                      "--workspace", self.workspace,
                      "--reload-interval", str(self.reload_interval), timeout=timeout)
        self.pids = self.server_pids()
        if r.returncode != 0 or "success" not in r.stdout + r.stderr:
            self.stop()
            raise RuntimeError(f"mindinsight start failed (exit {r.returncode}): "
                               f"{r.stdout}{r.stderr}\n{self.log_tail()}")
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.get("/datavisual/train-jobs")
                break
            except (urllib.error.URLError, ConnectionError, OSError):
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"MindInsight did not answer\n{self.log_tail()}")
                time.sleep(0.3)
        self.pids |= self.server_pids()
        self.start_seconds = time.monotonic() - t0
        return self

    def stop(self, timeout: float = 20) -> None:
        """``mindinsight stop --port P`` (SIGINT, SIGKILL after 3 s), then
        SIGKILL whatever of the server is still alive; waits until all are gone."""
        t0 = time.monotonic()
        pids = self.pids | self.server_pids()
        try:
            self._cli("stop", "--port", str(self.port), timeout=timeout)
        except subprocess.TimeoutExpired:
            pass
        deadline = time.monotonic() + timeout
        while True:
            left = {p for p in pids | self.server_pids() if _alive(p)}
            if not left:
                break
            if time.monotonic() > deadline - timeout / 2:
                for p in left:
                    try:
                        os.kill(p, signal.SIGKILL)
                    except OSError:
                        pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"MindInsight processes still alive: {sorted(left)}")
            time.sleep(0.2)
        self.pids = set()
        self.stop_seconds = time.monotonic() - t0
        if self._own_workspace:
            shutil.rmtree(self.workspace, ignore_errors=True)

    def log_tail(self) -> str:
        out = []
        for p in sorted(pathlib.Path(self.workspace, "log").rglob("*.log")):
            lines = p.read_text(errors="replace").splitlines()
            out += [f"--- {p}"] + lines[-15:]
        return "\n".join(out[-80:])

    # ----------------------------------------------------------- REST
    def get(self, path: str, **params: Any) -> Any:
        """GET ``/v1/mindinsight<path>?params``: parsed JSON, or the raw bytes
        of a non-JSON answer (``image/single-image`` returns PNG bytes).
        A list value repeats the parameter."""
        query = urllib.parse.urlencode(params, doseq=True)
        with urllib.request.urlopen(f"{self.url}{path}?{query}", timeout=30) as resp:
            body = resp.read()
            if resp.headers.get("Content-Type", "").startswith("application/json"):
                return json.loads(body)
            return body

    def get_json(self, path: str, **params: Any) -> Any:
        """As ``get``, but an HTTP error returns MindInsight's error JSON
        (``{"error_code": ..., "error_msg": ...}``) instead of raising."""
        try:
            return self.get(path, **params)
        except urllib.error.HTTPError as exc:
            return json.loads(exc.read() or b"{}")

    def post(self, path: str, body: Any) -> Any:
        req = urllib.request.Request(f"{self.url}{path}", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.loads(resp.read())

    def train_job(self, train_id: str) -> dict | None:
        jobs = self.get("/datavisual/train-jobs", train_id=train_id)["train_jobs"]
        return jobs[0] if jobs else None

    def wait_loaded(self, train_id: str, plugin: str | None = None, tag: str | None = None,
                    timeout: float = 60) -> dict:
        """Until the run is listed, cached (``cache_status == "CACHED"``) and,
        if given, lists ``tag`` under ``plugin``; returns its train-job item."""
        deadline = time.monotonic() + timeout
        while True:
            self.post("/datavisual/train-job-caches", {"train_ids": [train_id]})
            job = self.train_job(train_id)
            if job and job["cache_status"] == "CACHED" and (
                    plugin is None or tag in job["plugins"].get(plugin, [])):
                return job
            if time.monotonic() > deadline:
                raise AssertionError(f"MindInsight never loaded {train_id}"
                                     f"{f' ({plugin} {tag})' if plugin else ''}: {job}\n"
                                     f"{self.log_tail()}")
            time.sleep(0.3)

    def __enter__(self) -> "MindInsight":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
