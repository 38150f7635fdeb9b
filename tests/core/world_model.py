"""An in-memory session source for property tests of the event core (no HTTP by design: the
point is to explore thousands of world histories per second; HTTP paths are tested on the
simulator in tests/sensors)."""

import hashlib
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime

from rl_sessions_dagster.api.models import Checkpoint, TrainingSession
from rl_sessions_dagster.core.reading import ListCursorRejected

ACTIVE = {"CREATING", "RUNNING", "STOPPING"}
TERMINAL = {"STOPPED", "ERROR", "EXPIRED"}
PREFIX = "TRAINING_SESSION_STATUS_"


class Transient(Exception):
    """Stands in for a 5xx / timeout on one read."""


@dataclass
class Ckpt:
    id: str
    created_ms: int
    step: int
    registered: bool

    def to_checkpoint(self, session_id: str) -> Checkpoint:
        item: dict = {
            "id": self.id,
            "created_at": _iso(self.created_ms),
            "step": self.step,
            "session_id": session_id,
            "type": "CHECKPOINT_TYPE_INFERENCE",
        }
        if self.registered:
            item["inference_registration"] = {
                "model": {"id": f"ml_{self.id}", "revision_id": "rv_1"}
            }
        return Checkpoint.model_validate(item)


@dataclass
class Sess:
    id: str
    created_ms: int
    status: str
    checkpoints: list[Ckpt] = field(default_factory=list)
    history: list[str] = field(default_factory=list)
    updated_ms: int = 0

    def to_model(self) -> TrainingSession:
        ckpts = []
        for c in self.checkpoints:
            item: dict = {"id": c.id, "created_at": _iso(c.created_ms), "step": c.step}
            if c.registered:
                item["registration"] = {"model": {"id": f"ml_{c.id}", "revision_id": "rv_1"}}
            ckpts.append(item)
        raw = self.status if self.status.startswith("WEIRD") else PREFIX + self.status
        return TrainingSession.model_validate(
            {
                "id": self.id,
                "status": raw,
                "created_at": _iso(self.created_ms),
                "updated_at": _iso(self.updated_ms or self.created_ms),
                "inference_checkpoints": ckpts,
            }
        )


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat()


class FakeWorld:
    """Sessions with a clock; lists paged like the API, in either order; faults on demand."""

    def __init__(
        self, order: str = "newest_first", page_size: int = 3, uuid_ids: bool = False
    ) -> None:
        #: ids as the API issues them (UUIDs) instead of short readable ones.
        self.uuid_ids = uuid_ids
        self.sessions: dict[str, Sess] = {}
        self.clock_ms = 1_700_000_000_000
        self.order = order
        self.page_size = page_size
        self.fail_on_read: int | None = None  # raise Transient on the n-th read of a tick
        self.reads = 0
        self._n = 0

    # --- world changes -------------------------------------------------------------------
    def new_session(self, status: str = "CREATING") -> str:
        self._n += 1
        sid = self._id(f"s{self._n:04d}")
        self.sessions[sid] = Sess(sid, self.clock_ms, status, history=[status])
        return sid

    def set_status(self, sid: str, status: str) -> None:
        s = self.sessions[sid]
        s.status = status
        s.history.append(status)
        s.updated_ms = self.clock_ms

    def add_checkpoint(self, sid: str, registered: bool) -> str:
        s = self.sessions[sid]
        self._n += 1
        cid = self._id(f"c{self._n:04d}")
        s.checkpoints.append(Ckpt(cid, self.clock_ms, len(s.checkpoints) + 1, registered))
        return cid

    def _id(self, short: str) -> str:
        return str(uuid.UUID(hashlib.md5(short.encode()).hexdigest())) if self.uuid_ids else short

    def tick_clock(self, ms: int) -> None:
        self.clock_ms += ms

    # --- the SessionSource protocol ----------------------------------------------------------
    def _read(self) -> None:
        self.reads += 1
        if self.fail_on_read is not None and self.reads == self.fail_on_read:
            raise Transient(f"injected failure on read {self.reads}")

    def _ordered(self, statuses: set[str]) -> list[Sess]:
        items = [s for s in self.sessions.values() if s.status in statuses]
        if self.order == "newest_first":
            return sorted(items, key=lambda s: (s.created_ms, s.id), reverse=True)
        if self.order == "oldest_first":
            return sorted(items, key=lambda s: (s.created_ms, s.id))
        return sorted(items, key=lambda s: hashlib.md5(s.id.encode()).hexdigest())

    def _page(self, items: list[Sess], after: str | None):
        start = 0
        if after is not None:
            ids = [s.id for s in items]
            if after not in ids:
                raise ListCursorRejected(f"unknown cursor {after!r}")
            start = ids.index(after) + 1
        chunk = items[start : start + self.page_size]
        more = start + self.page_size < len(items)
        return [s.to_model() for s in chunk], (chunk[-1].id if more and chunk else None)

    def list_active_page(self, after, extra_statuses=()):
        self._read()
        # Sessions in an unknown status are not in either filtered list (as on the real API)
        # unless the tracker asks for that status by name.
        wanted = ACTIVE | {s.removeprefix(PREFIX) for s in extra_statuses}
        return self._page(self._ordered(wanted), after)

    def list_page(self, after, *, terminal):
        self._read()
        everything = {s.status for s in self.sessions.values()}
        return self._page(self._ordered(TERMINAL if terminal else everything), after)

    def list_inference_checkpoints_page(self, after):
        self._read()
        ckpts = [(c, s) for s in self.sessions.values() for c in s.checkpoints]
        ckpts.sort(key=lambda cs: (cs[0].created_ms, cs[0].id), reverse=True)
        start = 0
        if after is not None:
            start = [c.id for c, _ in ckpts].index(after) + 1
        chunk = ckpts[start : start + self.page_size]
        more = start + self.page_size < len(ckpts)
        return [c.to_checkpoint(s.id) for c, s in chunk], (
            chunk[-1][0].id if more and chunk else None
        )

    def get_session(self, session_id):
        self._read()
        s = self.sessions.get(session_id)
        return s.to_model() if s else None

    def server_time_ms(self):
        return self.clock_ms
