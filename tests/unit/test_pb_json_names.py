"""The shipped descriptor set leaves out the json_name protoc writes for
every field (proto/generate.py strips it where it is the default): each
protobuf runtime must derive the very name protoc wrote, so JSON of our
messages (json_format, used by the dialects) is unchanged."""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import subprocess
import sys

from conftest import require_module

ROOT = pathlib.Path(__file__).resolve().parents[2]

# prints {"full.field.name": json_name} of every field in summarylog.pb's pool
_NAMES = """
import json
from summarylog.pb import POOL, _FILES
from google.protobuf.internal import api_implementation

out = {}
def walk(messages, prefix):
    for m in messages:
        desc = POOL.FindMessageTypeByName(f"{prefix}.{m.name}")
        for f in desc.fields:
            out[f.full_name] = f.json_name
        walk(m.nested_type, desc.full_name)
for f in _FILES:
    walk(f.message_type, f.package)
print(json.dumps({"impl": api_implementation.Type(), "names": out}))
"""


def test_runtime_json_names_are_protocs(tmp_path) -> None:
    require_module("grpc_tools")
    spec = importlib.util.spec_from_file_location("proto_generate", ROOT / "proto" / "generate.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)  # type: ignore[union-attr]
    want = {}

    def walk(messages, prefix: str) -> None:
        for m in messages:
            for f in m.field:
                want[f"{prefix}.{m.name}.{f.name}"] = f.json_name
            walk(m.nested_type, f"{prefix}.{m.name}")

    for f in gen.protoc_set().file:
        walk(f.message_type, f.package)
    assert all(want.values())  # protoc wrote one for every field
    impls = []
    for impl in ("upb", "python"):  # the default runtime, and MindSpore's pure-Python one
        env = {**os.environ, "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION": impl}
        p = subprocess.run([sys.executable, "-P", "-c", _NAMES], capture_output=True, text=True,
                           cwd="/", env=env, timeout=120)
        assert p.returncode == 0, p.stderr
        got = json.loads(p.stdout)
        assert got["names"] == want
        impls.append(got["impl"])
    from summarylog.pb._descriptors import FILE_DESCRIPTOR_SET

    raw = len(gen.protoc_set().SerializeToString(deterministic=True))
    print(f"{len(want)} fields: the runtime's json_name is protoc's under {' and '.join(impls)}; "
          f"shipped descriptor set {len(FILE_DESCRIPTOR_SET)} B (protoc's {raw} B)")
