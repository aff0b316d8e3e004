"""Drain and close every open writer when the process ends: at exit, newest first, and on
SIGTERM/SIGHUP left at their default (raising ``SystemExit(128 + signum)``); how and why:
docs/reliability.md, "Crashes and shutdown"."""

from __future__ import annotations

import atexit
import itertools
import logging
import os
import signal
import threading
import weakref
from typing import Any

__all__ = ["register", "unregister", "close_all", "install_signal_handlers"]

log = logging.getLogger("summarylog")

_lock = threading.Lock()
_open: "weakref.WeakValueDictionary[int, Any]" = weakref.WeakValueDictionary()
_order = itertools.count(1)  # registration order: closed newest first
_installed = False
_exiting = False
_installed_pid = -1  # the process that installed the handlers
_SIGNALS = tuple(getattr(signal, n) for n in ("SIGTERM", "SIGHUP") if hasattr(signal, n))


def register(obj: Any) -> None:
    """Close ``obj`` (held weakly) at exit unless closed before."""
    with _lock:
        _open[next(_order)] = obj
    if not _installed:
        install_signal_handlers()


def unregister(obj: Any) -> None:
    """Forget ``obj`` (after its own ``close()``)."""
    with _lock:
        for key in [k for k, v in _open.items() if v is obj]:
            del _open[key]


def close_all() -> None:
    """Close every registered writer, newest first (a SummaryRecord before its Writer)."""
    while True:
        with _lock:
            if not _open:
                return
            obj = _open.pop(max(_open.keys()), None)
        try:
            if obj is not None:  # None: collected meanwhile
                obj.close()
        except Exception as exc:  # reported, never raised at exit
            log.warning("summarylog: closing %r at exit failed: %s", obj, exc)


def _on_signal(signum: int, frame: Any) -> None:
    global _exiting
    if getattr(_forking, "mask", None) is not None and os.getpid() == _installed_pid:
        # inside this thread's fork hooks, where a raise is swallowed: _restore_mask resends it
        _forking.deferred = signum
        return
    # the second signal, or a fork() child the at-fork hooks missed: die the default way
    if _exiting or os.getpid() != _installed_pid:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    _exiting = True
    raise SystemExit(128 + signum)


def install_signal_handlers() -> None:
    """Install the SIGTERM/SIGHUP handler where they are at their default (main thread, once)."""
    global _installed, _installed_pid
    if _installed or threading.current_thread() is not threading.main_thread():
        return
    _installed = True
    _installed_pid = os.getpid()
    _swap(signal.SIG_DFL, _on_signal)


def _swap(old: Any, new: Any) -> None:
    """Set ``new`` for SIGTERM/SIGHUP where their handler is ``old``."""
    for sig in _SIGNALS:
        try:
            if signal.getsignal(sig) is old:
                signal.signal(sig, new)
        except (ValueError, OSError):  # not the main interpreter, or not allowed here
            pass


# per forking thread: .mask, the signal mask to restore after fork() (_BLOCKING while
# being blocked), and .deferred, a signal that landed inside the fork hooks
_forking = threading.local()
_BLOCKING = object()


def _before_fork() -> None:
    # SIGTERM/SIGHUP blocked across fork(): CPython's after-fork reset would drop
    # one reaching the child before its default disposition is back
    if not _installed or not hasattr(signal, "pthread_sigmask"):
        return
    _forking.deferred = None
    _forking.mask = _BLOCKING  # a handler run by the call below defers
    try:
        _forking.mask = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
    except (ValueError, OSError):
        _forking.mask = None


def _restore_mask(resend: bool = True) -> None:
    """Unblock what _before_fork blocked; resend a deferred signal from a thread of its own."""
    mask = getattr(_forking, "mask", None)
    if mask is None:
        return
    try:
        if mask is not _BLOCKING:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    finally:
        _forking.mask = None
        signum, _forking.deferred = getattr(_forking, "deferred", None), None
        if signum is not None and resend:  # the forking thread is out of the hooks by then
            timer = threading.Timer(0.05, os.kill, (os.getpid(), signum))
            timer.daemon, timer.name = True, "summarylog-signal"
            timer.start()


def _after_fork_in_child() -> None:
    global _lock, _installed, _exiting
    _lock = threading.Lock()  # another thread may have held it at the fork
    _exiting = False
    if _installed:
        _installed = False
        _swap(_on_signal, signal.SIG_DFL)
    _restore_mask(resend=False)  # a signal deferred in the parent was the parent's


atexit.register(close_all)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_parent=_restore_mask,
                        after_in_child=_after_fork_in_child)
