"""Start the real TensorBoard server (``python -m tensorboard.main``) on a free
127.0.0.1 port and query its HTTP data API as the dashboard does; shared by the
integration tests that serve a log directory.  Loading is asynchronous in the
server, so reads poll (bounded) with :meth:`Server.eventually`; nothing here
asserts on timing."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Callable

from conftest import require

SERVER_START_TIMEOUT = 120.0
DATA_TIMEOUT = 60.0
HTTP_TIMEOUT = 30.0


_opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never a proxy for 127.0.0.1


@dataclasses.dataclass
class Server:
    base: str
    load_fast: str
    proc: subprocess.Popen[bytes]
    log_path: str

    def get(self, path: str, params: dict[str, Any] | None = None, body: Any = None) -> bytes:
        url = self.base + path
        if params:
            url += "?" + urllib.parse.urlencode(params)
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"} if body is not None else {}
        req = urllib.request.Request(url, data=data, headers=headers, method="POST" if data else "GET")
        with _opener.open(req, timeout=HTTP_TIMEOUT) as resp:
            assert resp.status == 200
            return resp.read()

    def json(self, path: str, params: dict[str, Any] | None = None, body: Any = None) -> Any:
        return json.loads(self.get(path, params, body))

    def log(self) -> str:
        with open(self.log_path, errors="replace") as f:
            return f.read()[-4000:]

    def hparams_tab(self) -> tuple[Any, Any]:
        """What the HParams tab asks for: the experiment, then its session groups with
        every hparam and metric column."""
        exp = self.json("/data/plugin/hparams/experiment",
                        body={"experimentName": "", "includeMetrics": True})
        cols = [{"hparam": i["name"], "includeInResult": True} for i in exp.get("hparamInfos", [])]
        cols += [{"metric": i["name"], "includeInResult": True} for i in exp.get("metricInfos", [])]
        groups = self.json("/data/plugin/hparams/session_groups", body={
            "experimentName": "",
            "allowedStatuses": ["STATUS_UNKNOWN", "STATUS_SUCCESS", "STATUS_FAILURE", "STATUS_RUNNING"],
            "colParams": cols, "startIndex": 0, "sliceSize": 100, "includeMetrics": True})
        return exp, groups

    def eventually(self, fetch: Callable[[], Any], done: Callable[[Any], bool],
                   timeout: float = DATA_TIMEOUT) -> Any:
        """Poll ``fetch`` until ``done(result)`` (the server loads in the
        background); bounded by ``timeout``; returns the last result."""
        deadline = time.monotonic() + timeout
        last: Any = None
        while True:
            assert self.proc.poll() is None, f"tensorboard exited:\n{self.log()}"
            try:
                last = fetch()
                if done(last):
                    return last
            except urllib.error.HTTPError as exc:  # 4xx: not loaded yet (e.g. unknown run or tag)
                body = exc.read()[:2000]
                exc.close()
                if exc.code >= 500:
                    raise AssertionError(f"HTTP {exc.code}: {body!r}\n{self.log()}") from None
                last = f"HTTP {exc.code}: {body!r}"
            if time.monotonic() > deadline:
                return last
            time.sleep(0.25)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            pass
    try:  # the data server child too, whether or not tensorboard is gone
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:  # pragma: no cover
        pass


def _data_server_usable() -> tuple[bool, str]:
    try:
        from tensorboard.data import server_ingester

        binary = server_ingester.get_server_binary()
    except Exception as exc:  # NoDataServerError, or tensorboard_data_server missing
        return False, f"no data server binary: {exc}"
    try:
        out = subprocess.run([binary.path, "--version"], capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"data server {binary.path} does not run: {exc}"
    if out.returncode != 0:
        return False, f"data server {binary.path} --version failed: {out.stderr[:500]!r}"
    return True, binary.path


def _children(pid: int) -> list[tuple[int, str]]:
    """(pid, exe) of the direct children of ``pid``, from /proc."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            ppid = int(stat[stat.rindex(")") + 2:].split()[1])
            if ppid == pid:
                out.append((int(entry), os.path.realpath(f"/proc/{entry}/exe")))
        except (OSError, ValueError, IndexError):
            continue
    return out


def _start_server(logdir: str, load_fast: str, log_path: str) -> Server:
    last_log = ""
    for _attempt in range(3):  # a free port can be taken between probe and bind
        port = _free_port()
        logf = open(log_path, "wb")
        cmd = [sys.executable, "-m", "tensorboard.main", "--logdir", logdir, "--host", "127.0.0.1",
               "--port", str(port), f"--load_fast={load_fast}", "--reload_interval", "1"]
        env = dict(os.environ, NO_PROXY="*", no_proxy="*")
        proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, env=env)
        logf.close()
        srv = Server(f"http://127.0.0.1:{port}", load_fast, proc, log_path)
        deadline = time.monotonic() + SERVER_START_TIMEOUT
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                srv.get("/data/runs")
                return srv
            except (urllib.error.URLError, ConnectionError, OSError):
                time.sleep(0.2)
        last_log = srv.log()
        _stop(proc)
        if "already in use" not in last_log and "Errno 98" not in last_log:
            break
    if load_fast == "true":
        require(False, f"tensorboard --load_fast=true (its Rust data server) starting; log:\n{last_log}")
    raise AssertionError(f"tensorboard --load_fast={load_fast} did not start within "
                         f"{SERVER_START_TIMEOUT}s; log:\n{last_log}")


def loaded_multiplexer(logdir: str) -> Any:
    """TensorBoard's in-process loader (the ``--load_fast=false`` path) over ``logdir``,
    everything kept, loaded once."""
    from tensorboard.backend.event_processing import plugin_event_accumulator
    from tensorboard.backend.event_processing import plugin_event_multiplexer

    m = plugin_event_multiplexer.EventMultiplexer(
        size_guidance=dict(plugin_event_accumulator.STORE_EVERYTHING_SIZE_GUIDANCE),
        tensor_size_guidance={}, max_reload_threads=1)
    m.AddRunsFromDirectory(logdir)
    m.Reload()
    return m


def plugin_context(logdir: str, m: Any = None) -> Any:
    """A TBContext over ``logdir`` (through the multiplexer ``m``, loaded here if None)
    for constructing TensorBoard's plugins in process."""
    from tensorboard.backend.event_processing import data_provider
    from tensorboard.plugins import base_plugin

    m = loaded_multiplexer(logdir) if m is None else m
    return base_plugin.TBContext(logdir=logdir, multiplexer=m, plugin_name_to_instance={},
                                 data_provider=data_provider.MultiplexerDataProvider(m, logdir))


def hparams_tab_in_process(m: Any, logdir: str) -> tuple[Any, Any]:
    """The HParams tab's two requests as its backend answers them in process: the
    experiment, then its session groups with every hparam and metric as a column
    (protobuf messages)."""
    from tensorboard import context
    from tensorboard.plugins.hparams import api_pb2 as api
    from tensorboard.plugins.hparams import backend_context, get_experiment
    from tensorboard.plugins.hparams import list_session_groups

    bctx = backend_context.Context(plugin_context(logdir, m))
    rctx = context.RequestContext()
    exp = get_experiment.Handler(rctx, bctx, "",
                                 api.GetExperimentRequest(include_metrics=True)).run()
    cols = [api.ColParams(hparam=i.name, include_in_result=True) for i in exp.hparam_infos]
    cols += [api.ColParams(metric=i.name, include_in_result=True) for i in exp.metric_infos]
    req = api.ListSessionGroupsRequest(
        allowed_statuses=[api.STATUS_UNKNOWN, api.STATUS_SUCCESS, api.STATUS_FAILURE,
                          api.STATUS_RUNNING],
        col_params=cols, start_index=0, slice_size=100, include_metrics=True)
    return exp, list_session_groups.Handler(rctx, bctx, "", req).run()
