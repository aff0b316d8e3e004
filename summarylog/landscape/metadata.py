"""What a loss landscape is computed from: the ``collect_landscape`` settings, checked
as MindSpore's SummaryCollector and SummaryLandscape check them, and the
``train_metadata.json`` beside the saved parameters, in MindSpore's schema (so
MindSpore's own SummaryLandscape reads ours and we read theirs)."""

from __future__ import annotations

import copy
import errno
import json
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CKPT_DIR", "METADATA_FILE", "DEFAULT_LANDSCAPE", "LANDSCAPE_KEYS",
           "check_collect_landscape", "checkpoint_name", "TrainMetadata"]

CKPT_DIR = "ckpt_dir"
METADATA_FILE = "train_metadata.json"
LANDSCAPE_KEYS = ("landscape_size", "unit", "num_samples", "create_landscape", "intervals")
#: MindSpore's defaults: parameters saved at steps 1-19, two PCA landscapes and one random
DEFAULT_LANDSCAPE: dict[str, Any] = {
    "landscape_size": 40,
    "unit": "step",
    "num_samples": 2048,
    "create_landscape": {"train": True, "result": True},
    "intervals": [list(range(1, 10)), list(range(10, 20))],
}
#: train_metadata.json's keys, in the order MindSpore writes them
_JSON_KEYS = ("epoch_group", "model_params_file_map", "step_per_epoch", "unit", "num_samples",
              "landscape_size", "create_landscape")
_MAX_JSON = 64 << 20  # a metadata file is small; a bigger one is not ours
_MAX_POINTS = 1 << 20  # interval points in all (each is a checkpoint file)


def _int(name: str, v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"collect_landscape[{name!r}] must be an int, got {type(v).__name__}")
    return v


def check_collect_landscape(value: Any, *, partial: bool = False) -> dict[str, Any] | None:
    """``collect_landscape`` checked and copied; None (or an empty dict) turns it off.

    A given dict replaces MindSpore's defaults as a whole, as in MindSpore; its
    ``intervals`` are required unless ``partial`` (SummaryLandscape's overrides, where
    only the keys given are checked).  Wrong types raise TypeError, wrong values
    ValueError, each naming the key."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise TypeError(f"collect_landscape must be a dict or None, got {type(value).__name__}")
    if not value:
        return None
    unknown = [k for k in value if k not in LANDSCAPE_KEYS]
    if unknown:
        raise ValueError(f"collect_landscape: unsupported keys {unknown!r} "
                         f"(expected some of {', '.join(LANDSCAPE_KEYS)})")
    out: dict[str, Any] = {}
    if "landscape_size" in value or not partial:
        size = _int("landscape_size", value.get("landscape_size", 40))
        if not 3 <= size <= 256:
            raise ValueError(f"collect_landscape['landscape_size'] must be between 3 and 256, "
                             f"got {size}")
        out["landscape_size"] = size
    if "unit" in value or not partial:
        unit = value.get("unit", "step")
        if not isinstance(unit, str):
            raise TypeError(f"collect_landscape['unit'] must be a str, got {type(unit).__name__}")
        if unit not in ("step", "epoch"):
            raise ValueError(f"collect_landscape['unit'] must be 'step' or 'epoch', got {unit!r}")
        out["unit"] = unit
    if "num_samples" in value or not partial:
        n = _int("num_samples", value.get("num_samples", 2048))
        if n <= 0:  # MindSpore accepts it and then evaluates the loss over no data
            raise ValueError(f"collect_landscape['num_samples'] must be > 0, got {n}")
        out["num_samples"] = n
    if "create_landscape" in value or not partial:
        create = value.get("create_landscape", {"train": True, "result": True})
        if not isinstance(create, Mapping):
            raise TypeError(f"collect_landscape['create_landscape'] must be a dict, "
                            f"got {type(create).__name__}")
        for k, v in create.items():
            if k not in ("train", "result"):
                raise ValueError(f"collect_landscape['create_landscape'] keys must be 'train' "
                                 f"or 'result', got {k!r}")
            if not isinstance(v, bool):
                raise TypeError(f"collect_landscape['create_landscape'][{k!r}] must be a bool, "
                                f"got {type(v).__name__}")
        # a missing key is False (MindSpore's SummaryLandscape would refuse it later)
        out["create_landscape"] = {"train": bool(create.get("train", False)),
                                   "result": bool(create.get("result", False))}
    if "intervals" in value or not partial:
        out["intervals"] = check_intervals(value.get("intervals"))
    return out


def check_intervals(intervals: Any) -> list[list[int]]:
    """A list of lists of at least three ints (steps or epochs, 1-based)."""
    if not isinstance(intervals, (list, tuple)):
        raise TypeError(f"collect_landscape['intervals'] must be a list of lists of ints, "
                        f"got {type(intervals).__name__}")
    if not intervals:
        raise ValueError("collect_landscape['intervals'] must not be empty")
    out, total = [], 0
    for i, points in enumerate(intervals):
        if not isinstance(points, (list, tuple)):
            raise TypeError(f"collect_landscape['intervals'][{i}] must be a list of ints, "
                            f"got {type(points).__name__}")
        if len(points) < 3:
            raise ValueError(f"collect_landscape['intervals'][{i}] must hold at least three "
                             f"points, got {list(points)!r}")
        for p in points:
            if isinstance(p, bool) or not isinstance(p, int):
                raise TypeError(f"collect_landscape['intervals'][{i}] must hold ints, "
                                f"got {type(p).__name__}")
            if p < 0:
                raise ValueError(f"collect_landscape['intervals'][{i}] holds {p}: steps and "
                                 f"epochs are >= 0")
        total += len(points)
        if total > _MAX_POINTS:
            raise ValueError(f"collect_landscape['intervals'] hold more than {_MAX_POINTS} "
                             f"points")
        out.append([int(p) for p in points])
    return out


def checkpoint_name(network: str, point: int, unit: str, ext: str) -> str:
    """MindSpore's name for the parameters saved at ``point``: ``Net_3_step.ckpt``."""
    safe = "".join(c if c.isalnum() or c in "_-." else "_" for c in network) or "Net"
    return f"{safe.lstrip('.') or 'Net'}_{int(point)}_{unit}{ext}"


@dataclass
class TrainMetadata:
    """``train_metadata.json``: the intervals (``epoch_group``), where each point's
    parameters are (``model_params_file_map``, point -> path) and the settings."""

    epoch_group: dict[int, list[int]]
    model_params_file_map: dict[str, str] = field(default_factory=dict)
    step_per_epoch: int = 0
    unit: str = "step"
    num_samples: int = 2048
    landscape_size: int = 40
    create_landscape: dict[str, bool] = field(
        default_factory=lambda: {"train": True, "result": True})

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any], step_per_epoch: int = 0) -> "TrainMetadata":
        """From checked ``collect_landscape`` settings (:func:`check_collect_landscape`)."""
        return cls(epoch_group=dict(enumerate(copy.deepcopy(settings["intervals"]))),
                   step_per_epoch=int(step_per_epoch), unit=settings["unit"],
                   num_samples=settings["num_samples"],
                   landscape_size=settings["landscape_size"],
                   create_landscape=dict(settings["create_landscape"]))

    def points(self) -> list[int]:
        """Every interval point, each once, in order of first appearance."""
        return list(dict.fromkeys(p for ps in self.epoch_group.values() for p in ps))

    def override(self, settings: Mapping[str, Any]) -> None:
        """SummaryLandscape's ``collect_landscape``: the keys given replace the
        file's (``intervals`` replaces ``epoch_group``)."""
        for k, v in check_collect_landscape(settings, partial=True).items() if settings else ():
            if k == "intervals":
                self.epoch_group = dict(enumerate(v))
            else:
                setattr(self, k, copy.deepcopy(v))

    def to_json(self) -> dict[str, Any]:
        return {"epoch_group": {str(k): list(v) for k, v in self.epoch_group.items()},
                "model_params_file_map": dict(self.model_params_file_map),
                "step_per_epoch": self.step_per_epoch, "unit": self.unit,
                "num_samples": self.num_samples, "landscape_size": self.landscape_size,
                "create_landscape": dict(self.create_landscape)}

    def write(self, summary_dir: str | os.PathLike[str]) -> str:
        """Write ``{summary_dir}/ckpt_dir/train_metadata.json`` whole (a fresh file
        renamed over it; a link planted there is replaced, never followed)."""
        from ..side_files import SideDir

        run = SideDir(os.fspath(summary_dir))
        try:
            ckpt = run.sub(CKPT_DIR)
            try:
                ckpt.replace(METADATA_FILE, json.dumps(self.to_json()).encode())
            finally:
                os.close(ckpt.fd)
        finally:
            os.close(run.fd)
        return os.path.join(os.fspath(summary_dir), CKPT_DIR, METADATA_FILE)

    @classmethod
    def read(cls, summary_dir: str | os.PathLike[str]) -> "TrainMetadata":
        """``{summary_dir}/ckpt_dir/train_metadata.json``, checked as MindSpore's
        SummaryLandscape checks it (FileNotFoundError when missing, ValueError when
        a key or value is wrong).  A checkpoint path that no longer exists (a run
        moved elsewhere) is looked up by its name in this ``ckpt_dir``."""
        base = os.path.join(os.fspath(summary_dir), CKPT_DIR)
        path = os.path.join(base, METADATA_FILE)
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
                         | getattr(os, "O_NONBLOCK", 0))
        except FileNotFoundError:
            raise FileNotFoundError(errno.ENOENT, f"no {METADATA_FILE} under {base}: collect the "
                                    f"parameters with a SummaryCollector's collect_landscape "
                                    f"first", path) from None
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise ValueError(f"{path} is not a regular file")
            raw = f.read(_MAX_JSON + 1)
        if len(raw) > _MAX_JSON:
            raise ValueError(f"{path} is larger than {_MAX_JSON} bytes: not a train_metadata.json")
        try:
            data = json.loads(raw)
        except ValueError as exc:
            raise ValueError(f"{path} is not JSON: {exc}") from None
        return cls.from_json(data, base, path)

    @classmethod
    def from_json(cls, data: Any, ckpt_dir: str, where: str = METADATA_FILE) -> "TrainMetadata":
        if not isinstance(data, dict):
            raise ValueError(f"{where}: expected a JSON object, got {type(data).__name__}")
        extra = [k for k in data if k not in _JSON_KEYS]
        missing = [k for k in _JSON_KEYS if k not in data]
        if extra or missing:
            raise ValueError(f"{where}: keys must be {', '.join(_JSON_KEYS)} "
                             f"(unexpected: {extra}, missing: {missing})")
        groups = data["epoch_group"]
        if not isinstance(groups, dict):
            raise ValueError(f"{where}: epoch_group must be an object")
        try:
            intervals = check_intervals(list(groups.values()))
            keys = [int(k) for k in groups]
            settings = check_collect_landscape(
                {"landscape_size": data["landscape_size"], "unit": data["unit"],
                 "num_samples": data["num_samples"],
                 "create_landscape": data["create_landscape"], "intervals": intervals})
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{where}: {exc}") from None
        assert settings is not None
        files = data["model_params_file_map"]
        spe = data["step_per_epoch"]
        if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
            raise ValueError(f"{where}: model_params_file_map must map points to paths")
        if isinstance(spe, bool) or not isinstance(spe, int):
            raise ValueError(f"{where}: step_per_epoch must be an int")
        found = {}
        for point in dict.fromkeys(p for ps in intervals for p in ps):
            p = files.get(str(point))
            if p is None:
                raise ValueError(f"{where}: no checkpoint for point {point} of the intervals")
            if not os.path.isabs(p) or not os.path.exists(p):
                p = os.path.join(ckpt_dir, os.path.basename(p))
            found[str(point)] = p
        return cls(epoch_group=dict(zip(keys, intervals)), model_params_file_map=found,
                   step_per_epoch=spe, unit=settings["unit"], num_samples=settings["num_samples"],
                   landscape_size=settings["landscape_size"],
                   create_landscape=settings["create_landscape"])
