"""Names of partition checkpoints in the blob store, and which one is the latest (pure).

How this works:
- A checkpoint of partition P, written by the owner holding fencing token F at time T, is
  `checkpoints/p{P:05d}/{F:020d}-{T in epoch ms:013d}.ckpt`. Objects are never overwritten:
  each checkpoint is a new key, and old ones are deleted later.
- Fixed-width decimal fields make string order equal to (fence, time) order, so the latest
  checkpoint of a partition is the greatest key under its prefix. Fence comes first: a stale
  owner whose late write lands after its successor's has a lower token and never wins,
  whatever the two machines' clocks say. Time only orders checkpoints of one lease.
- Widths: 5 digits hold every partition (at most 65,536); 20 hold any 64-bit token; 13 hold
  epoch milliseconds until the year 2286.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable

PREFIX = "checkpoints/"
SUFFIX = ".ckpt"
_MAX_PARTITION = 10**5 - 1
_MAX_FENCE = 10**20 - 1
_MAX_MS = 10**13 - 1
# [0-9], not \d: \d also matches other scripts' digits, which int() would accept.
_KEY = re.compile(r"checkpoints/p([0-9]{5})/([0-9]{20})-([0-9]{13})\.ckpt")


@dataclass(frozen=True, slots=True, order=True)
class CheckpointKey:
    """One checkpoint's name, parsed; orders as the keys do (partition, fence, time)."""

    partition: int
    fence: int
    at_ms: int  # epoch milliseconds, as written in the key

    def __post_init__(self) -> None:
        _check_range("partition", self.partition, _MAX_PARTITION)
        _check_range("fence", self.fence, _MAX_FENCE)
        _check_range("at (epoch ms)", self.at_ms, _MAX_MS)

    @property
    def at(self) -> float:
        """When it was written, in epoch seconds."""
        return self.at_ms / 1000

    @property
    def key(self) -> str:
        return f"{prefix_for(self.partition)}{self.fence:020d}-{self.at_ms:013d}{SUFFIX}"


def prefix_for(partition: int) -> str:
    """The prefix under which all of `partition`'s checkpoints live (one S3 listing)."""
    _check_range("partition", partition, _MAX_PARTITION)
    return f"{PREFIX}p{partition:05d}/"


def key_for(partition: int, fence: int, at: float) -> str:
    """The key of a checkpoint written at `at` (epoch seconds, cut to ms) under token `fence`.

    Raises ValueError for a negative or too wide field.
    """
    at_ms = int(at * 1000) if math.isfinite(at) else -1  # NaN and inf are no times
    return CheckpointKey(partition, fence, at_ms).key


def parse(key: str) -> CheckpointKey | None:
    """The fields of a checkpoint key; None for any other key (a foreign or partial object)."""
    match = _KEY.fullmatch(key)
    if match is None:
        return None
    partition, fence, at_ms = match.groups()
    return CheckpointKey(int(partition), int(fence), int(at_ms))


def latest(keys: Iterable[str]) -> dict[int, CheckpointKey]:
    """The latest checkpoint of each partition among `keys` (foreign keys are ignored)."""
    found: dict[int, CheckpointKey] = {}
    for key in keys:
        parsed = parse(key)
        if parsed is not None and (
            parsed.partition not in found or parsed > found[parsed.partition]
        ):
            found[parsed.partition] = parsed
    return found


def _check_range(name: str, value: int, maximum: int) -> None:
    if not 0 <= value <= maximum:
        raise ValueError(f"checkpoint {name} {value} is outside 0..{maximum}")
