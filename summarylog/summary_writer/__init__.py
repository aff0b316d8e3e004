"""summarylog.SummaryWriter: torch.utils.tensorboard's and tensorboardX's SummaryWriter,
call for call, over summarylog.Writer (one route to the disk; encoding off the caller's
thread).  Each group of methods is a module; this class puts them together."""

from __future__ import annotations

from .basic import BasicMethods
from .graphs import GraphMethods
from .media import MediaMethods
from .plugins import PluginMethods

__all__ = ["SummaryWriter"]


class SummaryWriter(PluginMethods, MediaMethods, GraphMethods, BasicMethods):
    """A drop-in for ``torch.utils.tensorboard.SummaryWriter`` and
    ``tensorboardX.SummaryWriter``: ``from summarylog import SummaryWriter``.

    Args (the peers'):
      log_dir: the run directory; default ``runs/<Mon><DD>_<HH-MM-SS>_<host><comment>``.
        ``logdir=`` (tensorboardX's name) is the same.
      comment: appended to the default directory name (ignored with ``log_dir``).
      purge_step: resuming at this step: TensorBoard drops earlier events with
        step >= it (written once, in the first file).
      max_queue: accepted and unused: summarylog's queue is bounded by bytes
        (``max_buffer``), not by a count of events.
      flush_secs: the longest an event waits before reaching the OS; summarylog's
        writer hands events over at least once a second whatever it says.
      filename_suffix: appended to event file names.
      write_to_disk: False writes nothing (tensorboardX).
      comet_config: tensorboardX's; only a disabled config is accepted.
      **writer_options: summarylog.Writer's keyword arguments (``durability``,
        ``compression``, ``max_file_size``, ``strict``, ``rank``, ``max_buffer``,
        ``on_full``, ``async_heavy``).

    After :meth:`close`, logging opens a new file in the same directory, as the peers do.
    File names never collide (pid and a sequence number in them).
    """
