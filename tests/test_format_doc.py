"""docs/format.md against the schemas it describes: every field number in
its TensorBoard and MindSpore sections (tables and inline ``name = N``) and
every ``DT_*`` number is checked against proto/summarylog (the compiled
descriptors in summarylog.pb), and its CRC test vectors against the core."""

from __future__ import annotations

import pathlib
import re

import pytest

from summarylog.pb import POOL
from summarylog.records.crc import crc32c, mask, masked_crc32c

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "format.md"
PACKAGES = {"6": "summarylog.tb", "7": "summarylog.ms"}  # doc section -> proto package


def _schemas() -> tuple[dict[str, dict[str, int]], dict[str, dict[str, int]]]:
    """{message full name: {field: number}}, {enum full name: {value: number}}
    of every file in proto/summarylog, as compiled into summarylog.pb."""
    messages: dict[str, dict[str, int]] = {}
    enums: dict[str, dict[str, int]] = {}

    def walk(msg) -> None:  # a message Descriptor
        messages[msg.full_name] = {f.name: f.number for f in msg.fields}
        for e in msg.enum_types:
            enums[e.full_name] = {v.name: v.number for v in e.values}
        for nested in msg.nested_types:
            walk(nested)

    files = sorted((ROOT / "proto").glob("summarylog/*/*.proto"))
    assert len(files) >= 7, files
    for path in files:
        f = POOL.FindFileByName(path.relative_to(ROOT / "proto").as_posix())
        for m in f.message_types_by_name.values():
            walk(m)
        for e in f.enum_types_by_name.values():
            enums[e.full_name] = {v.name: v.number for v in e.values}
    return messages, enums


MESSAGES, ENUMS = _schemas()
_ITEM = re.compile(r"(\w+) = (\d+)")
_TICKED = re.compile(r"`([^`]*)`")


def _resolve(package: str, name: str, parent: str | None = None) -> str:
    """The full name of message ``name`` (``Value``, ``Histogram.bucket``,
    ``.HyperParameters``) in ``package``, preferring one nested in ``parent``."""
    name = name.strip("`. ")
    if parent and f"{parent}.{name}" in MESSAGES:
        return f"{parent}.{name}"
    hits = [m for m in MESSAGES if m.startswith(package + ".") and m.endswith("." + name)]
    assert len(hits) == 1, f"{name!r} in {package}: {hits or 'no such message'}"
    return hits[0]


def _numbers(cell: str) -> list[int]:
    cell = cell.strip()
    m = re.fullmatch(r"(\d+)\s*[–-]\s*(\d+)", cell)
    if m:
        return list(range(int(m[1]), int(m[2]) + 1))
    return [int(x) for x in re.split(r"\s*,\s*", cell)]


def _braced(package: str, text: str, out: list[tuple[str, str, int]]) -> str:
    """Record the ``Type {a = 1; b = 2}`` groups of one backticked span (for
    Type) and return the span with them removed."""
    while True:
        m = re.search(r"\{([^{}]*)\}", text)
        if not m:
            return text
        items = _ITEM.findall(m[1])
        before = re.findall(r"\b([A-Z]\w*)\b", text[:m.start()])
        if items and before:  # not a JSON example or a generic map entry
            msg = _resolve(package, before[-1])
            out.extend((msg, f, int(n)) for f, n in items)
        text = text[:m.start()] + text[m.end():]


def _claims() -> list[tuple[str, str, int]]:
    """(message, field, number) for every field number the doc states."""
    out: list[tuple[str, str, int]] = []
    package = None
    heading_msg = None
    kind = None  # table shape: "num" (# | field ...), "msg" (message | # | field), "inline"
    table_msg = None
    top = None
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            package = PACKAGES.get(line[3:].split(".")[0])
            kind = None
            continue
        if package is None:
            continue
        if line.startswith("### "):
            ticked = [t for t in _TICKED.findall(line) if t[:1].isupper()]
            heading_msg = _resolve(package, ticked[0]) if ticked else None
            kind = None
            continue
        for span in _TICKED.findall(line):  # `Type {a = 1; ...}` anywhere
            _braced(package, span, out)
        if not line.startswith("|"):
            kind = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if kind is None:  # a header row
            head = [c.lower() for c in cells]
            top = None
            if head[0] == "#":
                kind = "num"
                named = _TICKED.findall(cells[1])
                table_msg = _resolve(package, named[0]) if named else heading_msg
            elif head[0] == "message" and len(head) > 2 and head[1] == "#":
                kind = "msg"
            elif head[0].startswith(("message", "`losslandscape` message")):
                kind = "inline"
            else:
                kind = "skip"
            continue
        if set(line) <= set("|-: ") or kind == "skip":
            continue
        if kind == "num":
            names = _TICKED.findall(_strip_braces(cells[1]))
            out.append((table_msg, names[0], _numbers(cells[0])[0]))
        elif kind == "msg":
            if cells[0]:
                if cells[0].startswith("`."):
                    table_msg = _resolve(package, cells[0], top)
                else:
                    table_msg = top = _resolve(package, cells[0], top)
            names = _TICKED.findall(re.sub(r"\([^)]*\)", "", _strip_braces(cells[2])))
            nums = _numbers(cells[1])
            assert len(names) == len(nums), line
            out.extend((table_msg, n, k) for n, k in zip(names, nums))
        else:  # message | fields, each "type name = N"
            msg = _resolve(package, cells[0], top)
            top = top or msg
            for span in _TICKED.findall(_strip_braces(cells[1])):
                out.extend((msg, f, int(n)) for f, n in _ITEM.findall(span))
    return out


def _strip_braces(text: str) -> str:
    while re.search(r"\{[^{}]*\}", text):
        text = re.sub(r"\{[^{}]*\}", "", text)
    return text


def test_every_field_number_in_the_doc_is_the_schemas() -> None:
    claims = _claims()
    wrong = [(m, f, n, MESSAGES[m].get(f)) for m, f, n in claims if MESSAGES[m].get(f) != n]
    print(f"docs/format.md: {len(claims)} field numbers checked against proto/summarylog, "
          f"{len(set(m for m, _, _ in claims))} messages")
    assert not wrong, wrong
    assert len(claims) > 150  # the parser found the tables


@pytest.mark.parametrize("section,enum", [("6", "summarylog.tb.DataType"),
                                          ("7", "summarylog.ms.DataType")])
def test_datatype_numbers(section: str, enum: str) -> None:
    text = DOC.read_text(encoding="utf-8")
    body = re.search(rf"^## {section}\..*?(?=^## )", text, flags=re.S | re.M)[0]
    pairs = re.findall(r"\b(DT_\w+) (\d+)\b", body)
    assert len(pairs) > 10
    assert {k: int(v) for k, v in pairs} == {k: ENUMS[enum][k] for k, _ in pairs}


def test_crc_vectors() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert "0xA282EAD8" in text and mask(0) == 0xA282EAD8
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32c(bytes(32)) == 0x8A9136AA and crc32c(b"\xff" * 32) == 0x62A8AB43
    assert crc32c(bytes(range(32))) == 0x46DD794E
    assert crc32c(bytes(range(31, -1, -1))) == 0x113FDB5C
    assert masked_crc32c(bytes(8)) == 0x07980329
    assert masked_crc32c(b"\x18" + bytes(7)) == 0x224B7FA3
    for v in ("0xE3069283", "0x8A9136AA", "0x62A8AB43", "0x46DD794E", "0x113FDB5C",
              "0x07980329", "0x224B7FA3", "0xAB364B12"):
        assert v in text, v
