"""Loss landscapes for every framework: what ``collect_landscape`` saves
(:mod:`.metadata`, :mod:`.checkpoints`), how a landscape is computed from it, and the
result (:class:`Landscape`) written to a run in either dialect (:mod:`.result`)."""

from .metadata import DEFAULT_LANDSCAPE, TrainMetadata, check_collect_landscape
from .result import Landscape, interval_tag, write_landscapes

__all__ = ["DEFAULT_LANDSCAPE", "Landscape", "TrainMetadata", "check_collect_landscape",
           "interval_tag", "write_landscapes"]
