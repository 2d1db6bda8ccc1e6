"""The cluster's run-time scope changes, and which of them a node has applied.

How this works (issue 16). A change (`ScopeChange`) is a crawl-wide exclude added, an
exclude lifted (`include_again`), or a seed's scope put in force. Each is recorded in Redis
(`redis_scope`) under the next number of the cluster's change counter (`seq`), then sent as
a control entry on every partition's link stream; a node applies it from the first stream
that brings it, and a starting node reads the record (`changes since 0`).

Rules:
- Changes to the same thing (a pattern, a seed) take effect in `seq` order. A node sees a
  change once per partition it owns, and streams are read independently, so a stale change
  (say the `exclude` before an `include_again` already applied) can come after a newer one:
  `ScopeLedger` keeps the newest `seq` applied per thing and refuses anything not newer.
- A change with `seq` 0 was not recorded (it cannot be ordered): it is always applied.
- Applying is idempotent on its own too (an exclude already in force is left alone), so a
  change applied again after a restart of the ledger does no harm.

Pure: JSON in, values and answers out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from trawl.errors import ConfigError, DataError
from trawl.frontier.scope import SeedScope, seed_id_of


class ScopeOp(StrEnum):
    EXCLUDE = "exclude"
    INCLUDE_AGAIN = "include_again"
    SEED = "seed"


@dataclass(frozen=True, slots=True)
class ScopeChange:
    """One change: `pattern` for EXCLUDE and INCLUDE_AGAIN, `seed` for SEED."""

    op: ScopeOp
    pattern: str = ""
    seed: SeedScope | None = None
    seq: int = 0  # its number in the cluster's order of changes; 0: not recorded

    def __post_init__(self) -> None:
        if (self.op is ScopeOp.SEED) != (self.seed is not None):
            wants = "needs a seed" if self.seed is None else "takes no seed"
            raise ValueError(f"a {self.op} change {wants}")
        if self.op is not ScopeOp.SEED and not self.pattern:
            raise ValueError(f"a {self.op} change needs a pattern")
        if self.seq < 0:
            raise ValueError(f"seq must be >= 0, got {self.seq}")

    @property
    def key(self) -> int | str:
        """What it changes: a seed id, or a pattern (adding and lifting an exclude change
        the same thing)."""
        return self.pattern if self.seed is None else seed_id_of(self.seed.url)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"op": self.op.value}
        if self.seed is not None:
            out["scope"] = self.seed.to_json()
        else:
            out["pattern"] = self.pattern
        if self.seq:
            out["seq"] = self.seq
        return out

    def numbered(self, seq: int) -> ScopeChange:
        return ScopeChange(self.op, self.pattern, self.seed, seq)

    @classmethod
    def from_json(cls, raw: object, where: str) -> ScopeChange:
        """A change as `to_json` (or the API) wrote it; DataError naming `where` otherwise.
        The pattern is not compiled here: applying it checks it, as the API does."""
        if not isinstance(raw, dict):
            raise DataError(f"{where}: a scope change is a JSON object, got {raw!r}")
        try:
            op = ScopeOp(str(raw.get("op")))
        except ValueError:
            raise DataError(f"{where}: unknown scope change {raw.get('op')!r}") from None
        seq = raw.get("seq", 0)
        if isinstance(seq, bool) or not isinstance(seq, int) or seq < 0:
            raise DataError(f"{where}: seq = {seq!r} is not a change number")
        if op is ScopeOp.SEED:
            try:
                seed = SeedScope.from_json(raw.get("scope"), f"{where}.scope")
            except ConfigError as exc:
                raise DataError(str(exc)) from None
            return cls(op, seed=seed, seq=seq)
        pattern = raw.get("pattern")
        if not isinstance(pattern, str) or not pattern:
            raise DataError(f"{where}: a {op} change needs a 'pattern' string")
        return cls(op, pattern, seq=seq)


@dataclass(slots=True)
class ScopeLedger:
    """The newest change applied per thing changed, and how far the record was read.

    Written and read by the node's crawl loop only. One small entry per pattern or seed
    ever changed: a fraction of what the ScopeBook keeps of the same seeds."""

    synced_through: int = 0  # every recorded change up to this seq has been seen
    _applied: dict[int | str, int] = field(default_factory=dict)

    def is_new(self, change: ScopeChange) -> bool:
        """Should `change` be applied: not older than (nor the same as) one applied."""
        return change.seq == 0 or change.seq > self._applied.get(change.key, 0)

    def note(self, change: ScopeChange) -> None:
        """`change` is in force here (applied, or made here before it was recorded)."""
        if change.seq > self._applied.get(change.key, 0):
            self._applied[change.key] = change.seq

    def __repr__(self) -> str:
        return f"<ScopeLedger synced_through={self.synced_through} things={len(self._applied)}>"
