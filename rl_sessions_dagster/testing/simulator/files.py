"""Checkpoint downloads: ``GET /v1/rl/checkpoints/{id}/download`` and the "presigned" file URLs.

URLs point back at the simulator (``/_sim/files/<checkpoint>/<file>?sig=…``) and, like real
presigned URLs, need no Authorization header — only a valid signature. File contents are
deterministic bytes of the advertised size.
"""

from __future__ import annotations

import hmac
import json
import random
from hashlib import blake2b

from .errors import SimulatorError, not_found
from .queries import VARIANT_FILES, file_size
from .routing import Request, Response, Router, json_response
from .world import SimulatedWorld

_ALL_FILES = frozenset(name for names in VARIANT_FILES.values() for name in names)


def file_content(checkpoint_id: str, filename: str) -> bytes:
    """The bytes a simulated checkpoint file holds (JSON padded to size, or random weights)."""
    size = file_size(checkpoint_id, filename)
    if filename.endswith(".json"):
        text = json.dumps({"checkpoint_id": checkpoint_id, "file": filename, "simulated": True})
        return text.encode().ljust(size, b" ")
    return random.Random(f"{checkpoint_id}/{filename}").randbytes(size)


class CheckpointFiles:
    """The download endpoint plus the file server behind its URLs."""

    def __init__(self, world: SimulatedWorld, secret: bytes) -> None:
        self.world = world
        self._secret = secret

    def register(self, router: Router) -> None:
        router.add("GET", "/v1/rl/checkpoints/{id}/download", self.download)
        router.add("GET", "/_sim/files/{id}/{id}", self.serve_file)

    def signature(self, checkpoint_id: str, filename: str) -> str:
        """Signature of a file URL (keyed hash; only this simulator instance accepts it)."""
        mac = blake2b(f"{checkpoint_id}/{filename}".encode(), key=self._secret, digest_size=12)
        return mac.hexdigest()

    def download(self, req: Request) -> Response:
        ckpt = req.ids[0]
        files = self.world.download_files(ckpt, req.arg("variant"))
        data = [
            {
                "filename": name,
                "url": f"{req.base_url}/_sim/files/{ckpt}/{name}?sig={self.signature(ckpt, name)}",
                "size": size,
            }
            for name, size in files
        ]
        return json_response({"data": data})

    def serve_file(self, req: Request) -> Response:
        ckpt, name = req.ids
        if not hmac.compare_digest(req.arg("sig") or "", self.signature(ckpt, name)):
            raise SimulatorError(403, "invalid or missing signature", param="sig")
        if name not in _ALL_FILES:
            raise not_found("file", name)
        self.world.checkpoint_json(ckpt)  # 404 for an unknown checkpoint
        return Response(200, file_content(ckpt, name), content_type="application/octet-stream")
