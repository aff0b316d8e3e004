"""Start a real MindInsight (its own venv) on 127.0.0.1 over a summary base
dir, query its REST API, stop it (``mindinsight stop --port``)."""

from __future__ import annotations

import json
import os
import pathlib
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class MindInsight:
    """``with MindInsight(venv, base_dir, workspace) as mi: mi.get(...)``."""

    def __init__(self, venv: pathlib.Path, base_dir: str | os.PathLike[str],
                 workspace: str | os.PathLike[str]) -> None:
        self.venv = pathlib.Path(venv)
        self.base_dir = os.fspath(base_dir)
        self.workspace = os.fspath(workspace)
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1/mindinsight"
        self.env = dict(os.environ, PATH=f"{self.venv / 'bin'}{os.pathsep}{os.environ['PATH']}")

    def _cli(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(self.venv / "bin" / "mindinsight"), *args], env=self.env,
                              capture_output=True, text=True, timeout=timeout)

    def start(self) -> "MindInsight":
        r = self._cli("start", "--summary-base-dir", self.base_dir, "--port", str(self.port),
                      "--workspace", self.workspace, "--reload-interval", "1")
        if r.returncode != 0 or "success" not in r.stdout + r.stderr:
            raise RuntimeError(f"mindinsight start failed: {r.stdout}{r.stderr}\n"
                               f"{self.log_tail()}")
        deadline = time.monotonic() + 60
        while True:
            try:
                self.get("/datavisual/train-jobs")
                return self
            except (urllib.error.URLError, ConnectionError, OSError):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"MindInsight did not answer\n{self.log_tail()}")
                time.sleep(0.3)

    def log_tail(self) -> str:
        out = []
        for p in sorted(pathlib.Path(self.workspace, "log").rglob("*.log")):
            lines = p.read_text(errors="replace").splitlines()
            out += [f"--- {p}"] + lines[-15:]
        return "\n".join(out[-80:])

    def get(self, path: str, **params: Any) -> Any:
        query = urllib.parse.urlencode(params, doseq=True)
        with urllib.request.urlopen(f"{self.url}{path}?{query}", timeout=30) as resp:
            body = resp.read()
            if resp.headers.get("Content-Type", "").startswith("application/json"):
                return json.loads(body)
            return body

    def get_json(self, path: str, **params: Any) -> Any:
        try:
            return self.get(path, **params)
        except urllib.error.HTTPError as exc:
            return json.loads(exc.read() or b"{}")

    def post(self, path: str, body: Any) -> Any:
        req = urllib.request.Request(f"{self.url}{path}", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.loads(resp.read())

    def wait_loaded(self, train_id: str, plugin: str, tag: str, timeout: float = 60) -> None:
        """Until MindInsight lists ``tag`` under ``plugin`` for the job."""
        deadline = time.monotonic() + timeout
        while True:
            self.post("/datavisual/train-job-caches", {"train_ids": [train_id]})
            jobs = self.get("/datavisual/train-jobs")["train_jobs"]
            job = next((j for j in jobs if j["train_id"] == train_id), None)
            if job and tag in job["plugins"].get(plugin, []):
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"MindInsight never listed {tag} ({plugin}) for {train_id}:"
                                     f" {job}\n{self.log_tail()}")
            time.sleep(0.5)

    def stop(self) -> None:
        self._cli("stop", "--port", str(self.port))

    def __enter__(self) -> "MindInsight":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
