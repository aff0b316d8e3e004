"""A progress bar for landscape computations: tqdm's when tqdm is installed, else one
line on stderr rewritten at most twice a second; nothing when disabled."""

from __future__ import annotations

import sys
import time
from typing import Any

__all__ = ["Progress"]


class Progress:
    """``Progress(total, desc, enabled)``; ``update(n)`` points done; ``close()``."""

    def __init__(self, total: int, desc: str, enabled: bool = True) -> None:
        self.total, self.desc, self.done = int(total), desc, 0
        self._bar: Any = None
        self._plain = False
        self._last = 0.0
        if not enabled:
            return
        try:
            from tqdm.auto import tqdm
        except ImportError:
            self._plain = True
            self._line()
        else:
            self._bar = tqdm(total=self.total, desc=desc, unit="pt", file=sys.stderr,
                             leave=False, dynamic_ncols=True)

    def _line(self, end: str = "") -> None:
        sys.stderr.write(f"\r{self.desc}: {self.done}/{self.total} points{end}")
        sys.stderr.flush()

    def update(self, n: int) -> None:
        self.done += n
        if self._bar is not None:
            self._bar.update(n)
        elif self._plain:
            now = time.monotonic()
            if now - self._last >= 0.5 or self.done >= self.total:
                self._last = now
                self._line()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        elif self._plain:
            self._plain = False
            self._line("\n")

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
