"""Loss landscapes for every framework: what ``collect_landscape`` saves
(:mod:`.metadata`, :mod:`.checkpoints`), how a landscape is computed from it, and the
result (:class:`Landscape`) written to a run in either dialect (:mod:`.result`)."""

from .compute import LandscapeError, compute, from_checkpoints
from .metadata import DEFAULT_LANDSCAPE, TrainMetadata, check_collect_landscape
from .result import Landscape, interval_tag, write_landscapes
from .summary_landscape import SummaryLandscape

__all__ = ["DEFAULT_LANDSCAPE", "Landscape", "LandscapeError", "SummaryLandscape",
           "TrainMetadata", "check_collect_landscape", "compute", "from_checkpoints",
           "interval_tag", "write_landscapes"]
