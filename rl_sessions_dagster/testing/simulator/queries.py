"""Read side of the world: wire JSON of single items and keyset-paginated pages as bytes.

Pages are assembled under the lock from the sorted indices (``index.py``) and the per-item
serialization caches (``wire.py``); a page of 100 warm sessions is a join of 100 byte strings.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable, Iterator
from hashlib import blake2b
from itertools import islice
from typing import Any

from .constants import (
    RESOURCE_PENDING,
    VARIANT_ADAPTER,
    VARIANT_MERGED,
    session_status,
)
from .errors import bad_request
from .index import Key
from .state import Resource, WorldBase, locked
from .wire import (
    chat_names,
    checkpoint_bytes,
    dumps,
    page_bytes,
    resource_bytes,
    resource_dict,
    session_bytes,
)

#: Files behind each download variant (sizes are derived from the checkpoint id).
VARIANT_FILES = {
    VARIANT_MERGED: ("config.json", "model.safetensors"),
    VARIANT_ADAPTER: ("adapter_config.json", "adapter_model.safetensors"),
}


def file_size(checkpoint_id: str, filename: str) -> int:
    """Deterministic small size of a simulated checkpoint file (json ≤ 2 KiB, weights ≤ 64 KiB)."""
    h = int.from_bytes(
        blake2b(f"{checkpoint_id}/{filename}".encode(), digest_size=4).digest(), "big"
    )
    if filename.endswith(".json"):
        return 256 + h % 1792
    return 4096 + h % 61440


def _page(
    keys: Iterator[Key],
    limit: int,
    predicate: Callable[[Key], bool] | None,
    serialize: Callable[[str], bytes],
) -> bytes:
    it = keys if predicate is None else filter(predicate, keys)
    picked = list(islice(it, limit + 1))
    has_more = len(picked) > limit
    del picked[limit:]
    cursor = picked[-1][1] if has_more else ""
    return page_bytes([serialize(k[1]) for k in picked], limit, has_more, cursor)


def _and(preds: list[Callable[[Key], bool]]) -> Callable[[Key], bool] | None:
    if not preds:
        return None
    if len(preds) == 1:
        return preds[0]
    return lambda k: all(p(k) for p in preds)


def _statuses(status: str | Iterable[str] | None) -> list[str] | None:
    if status is None:
        return None
    names = [status] if isinstance(status, str) else list(status)
    return [session_status(n) for n in names]


class QueriesMixin(WorldBase):
    """Getters returning wire JSON (dicts for Python callers, bytes for the HTTP layer)."""

    # --- Python-facing getters -------------------------------------------------------------
    @locked
    def session(self, session_id: str) -> dict[str, Any]:
        """The session's wire JSON, exactly as ``GET /v1/rl/training-sessions/{id}`` returns it."""
        return json.loads(session_bytes(self._session(session_id)))

    @locked
    def session_ids(self, status: str | Iterable[str] | None = None) -> list[str]:
        """Ids in list order (the configured order), optionally of some statuses only."""
        return [k[1] for k in self._session_index.iter_desc(None, _statuses(status))]

    @locked
    def sessions(self, status: str | Iterable[str] | None = None) -> list[dict[str, Any]]:
        """Wire JSON of every session (optionally filtered by status), in list order."""
        return [json.loads(session_bytes(self._sessions[i])) for i in self.session_ids(status)]

    @locked
    def checkpoint(self, checkpoint_id: str) -> dict[str, Any]:
        """The ``Checkpoint`` JSON of ``GET /v1/rl/checkpoints/{id}``."""
        ck = self._checkpoint(checkpoint_id)
        return json.loads(checkpoint_bytes(ck, self._sessions[ck.session_id]))

    @locked
    def checkpoints(
        self, session_id: str | None = None, type: str | None = None
    ) -> list[dict[str, Any]]:
        """``Checkpoint`` JSON of all checkpoints, newest first, optionally filtered."""
        page = self.page_checkpoints(limit=10**9, session_id=session_id, type=type)
        return json.loads(page)["data"]

    @locked
    def model_resource(self, resource_id: str) -> dict[str, Any]:
        """The ``ModelResources`` JSON of one resource."""
        return json.loads(self._resource_bytes(self._resource(resource_id)))

    @locked
    def model_resources(self) -> list[dict[str, Any]]:
        """``ModelResources`` JSON of every resource, in list order."""
        keys = self._resource_index.iter_desc(None)
        return [json.loads(self._resource_bytes(self._resources[k[1]])) for k in keys]

    @locked
    def counts(self) -> dict[str, Any]:
        """Sizes of the world, per status / type (what ``/_sim/stats`` reports)."""
        return {
            "sessions": len(self._sessions),
            "sessions_by_status": self._session_index.part_counts(),
            "model_resources": len(self._resources),
            "model_resources_by_status": self._resource_index.part_counts(),
            "checkpoints": len(self._checkpoints),
            "checkpoints_by_type": self._checkpoint_index.part_counts(),
            "operations": len(self._operations),
        }

    # --- HTTP-facing bytes -----------------------------------------------------------------
    @locked
    def session_json(self, session_id: str) -> bytes:
        """Cached wire bytes of one session."""
        return session_bytes(self._session(session_id))

    @locked
    def resource_json(self, resource_id: str) -> bytes:
        """Wire bytes of one model resource."""
        return self._resource_bytes(self._resource(resource_id))

    @locked
    def checkpoint_json(self, checkpoint_id: str) -> bytes:
        """Cached wire bytes of one checkpoint (``Checkpoint`` shape)."""
        ck = self._checkpoint(checkpoint_id)
        return checkpoint_bytes(ck, self._sessions[ck.session_id])

    def _resource_bytes(self, r: Resource) -> bytes:
        if r.status != RESOURCE_PENDING:
            return resource_bytes(r)
        # Older resources of the same GPU type still waiting, plus one (provisioning ones
        # that left the capacity queue wait only for their pods: position 1).
        older = sum(
            1
            for o in self._resources.values()
            if o.status == RESOURCE_PENDING
            and o.queued
            and o.gpu_type == r.gpu_type
            and (o.created_at, o.id) < (r.created_at, r.id)
        )
        return dumps(resource_dict(r, older + 1 if r.queued else 1))

    @locked
    def page_sessions(
        self,
        *,
        limit: int = 20,
        after: str | None = None,
        statuses: Collection[str] | None = None,
        resource_id: str | None = None,
        created_by: str | None = None,
    ) -> bytes:
        """One page of ``GET /v1/rl/training-sessions`` (statuses must be full constants)."""
        after_key = None
        if after:
            s = self._sessions.get(after)
            if s is None:
                raise bad_request(f"unknown cursor {after!r}", param="after", code="invalid_cursor")
            after_key = self._session_key(s)
        sessions = self._sessions
        preds: list[Callable[[Key], bool]] = []
        if resource_id is not None:
            r = self._resources.get(resource_id)
            ids = r.session_ids if r is not None else []
            keys = sorted((self._session_key(sessions[i]) for i in ids), reverse=True)
            if after_key is not None:
                keys = [k for k in keys if k < after_key]
            it: Iterator[Key] = iter(keys)
            if statuses:
                wanted = set(statuses)
                preds.append(lambda k: sessions[k[1]].status in wanted)
        else:
            it = self._session_index.iter_desc(after_key, statuses or None)
        if created_by is not None:
            preds.append(lambda k: sessions[k[1]].created_by == created_by)
        return _page(it, limit, _and(preds), lambda i: session_bytes(sessions[i]))

    @locked
    def page_checkpoints(
        self,
        *,
        limit: int = 20,
        after: str | None = None,
        session_id: str | None = None,
        type: str | None = None,
        base_model: str | None = None,
    ) -> bytes:
        """One page of ``GET /v1/rl/checkpoints``, newest first (created_at desc, then id desc)."""
        after_key = None
        if after:
            c = self._checkpoints.get(after)
            if c is None:
                raise bad_request(f"unknown cursor {after!r}", param="after", code="invalid_cursor")
            after_key = self._checkpoint_key(c)
        ckpts, sessions = self._checkpoints, self._sessions
        preds: list[Callable[[Key], bool]] = []
        if session_id is not None:
            s = sessions.get(session_id)
            own = (s.inference + s.training) if s is not None else []
            keys = sorted((self._checkpoint_key(c) for c in own), reverse=True)
            if after_key is not None:
                keys = [k for k in keys if k < after_key]
            it: Iterator[Key] = iter(keys)
            if type is not None:
                preds.append(lambda k: ckpts[k[1]].kind == type)
        else:
            it = self._checkpoint_index.iter_desc(after_key, None if type is None else (type,))
        if base_model is not None:
            preds.append(lambda k: sessions[ckpts[k[1]].session_id].base_model == base_model)

        def serialize(i: str) -> bytes:
            ck = ckpts[i]
            return checkpoint_bytes(ck, sessions[ck.session_id])

        return _page(it, limit, _and(preds), serialize)

    @locked
    def page_resources(
        self,
        *,
        limit: int = 20,
        after: str | None = None,
        statuses: Collection[str] | None = None,
        created_by: str | None = None,
    ) -> bytes:
        """One page of ``GET /v1/rl/model-resources`` (same order setting as sessions)."""
        after_key = None
        if after:
            r = self._resources.get(after)
            if r is None:
                raise bad_request(f"unknown cursor {after!r}", param="after", code="invalid_cursor")
            after_key = self._resource_key(r)
        resources = self._resources
        it = self._resource_index.iter_desc(after_key, statuses or None)
        pred = None
        if created_by is not None:
            pred = lambda k: resources[k[1]].created_by == created_by  # noqa: E731
        return _page(it, limit, pred, lambda i: self._resource_bytes(resources[i]))

    # --- chat and downloads ----------------------------------------------------------------
    @locked
    def chat_model(self, name: str) -> tuple[str, int] | None:
        """``(checkpoint_id, step)`` of the inference checkpoint registered under ``name``."""
        if self._chat_names is None:
            names: dict[str, str] = {}
            for ck in self._checkpoints.values():
                if ck.registered_at is not None and ck.is_inference:
                    for n in chat_names(ck, self._sessions[ck.session_id]):
                        names[n] = ck.id
            self._chat_names = names
        cid = self._chat_names.get(name)
        if cid is None:
            return None
        return cid, self._checkpoints[cid].step

    @locked
    def download_files(self, checkpoint_id: str, variant: str | None) -> list[tuple[str, int]]:
        """``(filename, size)`` of a checkpoint download; 400 for a missing/invalid variant, a
        training checkpoint, or the adapter variant of a full-weight session."""
        ck = self._checkpoint(checkpoint_id)
        if not variant:
            raise bad_request("variant is required", param="variant", code="missing_parameter")
        if variant not in VARIANT_FILES:
            raise bad_request(f"invalid variant {variant!r}", param="variant")
        if not ck.is_inference:
            raise bad_request("only inference checkpoints can be downloaded", param="checkpoint_id")
        if variant == VARIANT_ADAPTER and self._sessions[ck.session_id].lora is None:
            raise bad_request("the adapter variant exists only for LoRA sessions", param="variant")
        return [(name, file_size(ck.id, name)) for name in VARIANT_FILES[variant]]
