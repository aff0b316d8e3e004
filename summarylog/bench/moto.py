"""The S3 emulator of the remote bench rows: moto's server (``moto[server]``) in a
subprocess on 127.0.0.1, logging one line per request (for the request counts)."""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from typing import Any

from .registry import PeerMissing, need_peer

__all__ = ["Moto", "make_bucket"]

_LINE = re.compile(r'"(GET|PUT|POST|HEAD|DELETE) ([^ ]+) HTTP/1\.[01]" (\d{3})')
_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # werkzeug colours some status codes


def make_bucket(endpoint: str, bucket: str) -> None:
    """Create ``bucket`` at an S3 endpoint (already there: fine)."""
    req = urllib.request.Request(f"{endpoint}/{bucket}", method="PUT")
    with contextlib.suppress(OSError):
        urllib.request.urlopen(req, timeout=10).read()


class Moto:
    """moto's S3 server, started now, stopped by :meth:`stop` (or ``with``)."""

    def __init__(self, tmpdir: str) -> None:
        need_peer("moto.server", "pip install 'moto[server]'")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.log_path = os.path.join(tmpdir, f"moto-{self.port}.log")
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1",
                                      "-p", str(self.port)], stdout=self._log,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        end = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(self.endpoint + "/moto-api/", timeout=1).read()
                break
            except urllib.error.HTTPError:
                break  # it answers
            except OSError:
                if time.monotonic() > end or self.proc.poll() is not None:
                    self.stop()
                    raise PeerMissing("error: the S3 emulator did not start") from None
                time.sleep(0.05)

    def options(self) -> dict[str, Any]:
        """s3fs storage options for this server."""
        return {"endpoint_url": self.endpoint, "key": "bench", "secret": "bench",
                "client_kwargs": {"region_name": "us-east-1"}}

    def requests(self) -> list[tuple[str, str, int]]:
        """(method, target, status) of every request answered so far."""
        time.sleep(0.2)  # the server logs a request after answering it
        with open(self.log_path, "rb") as f:
            text = _ANSI.sub("", f.read().decode("latin1"))
        return [(m, t, int(s)) for m, t, s in _LINE.findall(text)]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()

    def __enter__(self) -> "Moto":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
