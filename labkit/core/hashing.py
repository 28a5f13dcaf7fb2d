"""Content hashes: short, stable fingerprints for datasets, weights and configs."""

from __future__ import annotations

import hashlib
import json

import torch

HASH_LEN = 12  # hex characters kept; 48 bits is plenty to tell runs apart


def hash_tensors(named: dict[str, torch.Tensor]) -> str:
    """Hash named tensors by name, dtype, shape and bytes, in sorted name order."""
    h = hashlib.sha256()
    for name in sorted(named):
        t = named[name].detach().cpu().contiguous()
        h.update(f"{name}|{t.dtype}|{tuple(t.shape)}|".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")  # 0-d too
    return h.hexdigest()[:HASH_LEN]


def hash_module(module: torch.nn.Module) -> str:
    """Hash a model's parameters and buffers (its state_dict)."""
    return hash_tensors(dict(module.state_dict()))


def hash_json(obj) -> str:
    """Hash any JSON-able object, independent of key order."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=True)
    return hashlib.sha256(text.encode()).hexdigest()[:HASH_LEN]
