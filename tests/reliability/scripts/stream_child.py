"""Child for test_stream_memory: read a run's scalars one way, print JSON with the
values read and the process's peak RSS / virtual memory (kB, /proc/self/status)."""

import json
import sys


def status() -> dict:
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmHWM", "VmPeak", "VmRSS", "VmSize"):
                out[key] = int(rest.split()[0])
    return out


def main() -> None:
    mode, listing, chunk = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with open(listing) as f:
        files = json.load(f)
    import numpy as np  # noqa: F401 - imported before the baseline

    from summarylog import Reader
    from summarylog.read_stream import iter_scalars

    base = status()
    n = 0
    checksum = 0.0
    if mode == "stream":
        for c in iter_scalars(files, chunk=chunk, purge=False):
            n += len(c.step)
            checksum += float(c.value.sum())
    elif mode in ("reader", "reader_file"):  # the run's directory, or its one file
        r = Reader(files[0] if mode == "reader_file" else files[0].rsplit("/", 1)[0],
                   purge=False)
        for tag in r.scalar_tags("."):
            s = r.scalars(".", tag)
            n += len(s.step)
            checksum += float(s.value.sum())
    else:
        raise SystemExit(f"unknown mode {mode}")
    print(json.dumps({"base": base, "end": status(), "values": n, "checksum": checksum}))


main()
