"""A minimal reader of the .glb files animgraph writes, for tests, independent of ``animgraph.gltf``.

It trusts the file (tightly packed float accessors); ``curves`` evaluates the glTF spec's
interpolation (Appendix C) at any time, ``world`` composes parents' TRS matrices.
"""

from __future__ import annotations

import json
import struct

import numpy as np


def read_glb(path):
    """(JSON document, accessor(i) -> float64 array (count, width))."""
    raw = open(path, "rb").read()
    magic, version, length = struct.unpack_from("<4sII", raw)
    assert (magic, version, length) == (b"glTF", 2, len(raw))
    n, kind = struct.unpack_from("<II", raw, 12)
    doc = json.loads(raw[20:20 + n])
    m, kind2 = struct.unpack_from("<II", raw, 20 + n)
    blob = raw[28 + n:28 + n + m]
    widths = {"SCALAR": 1, "VEC3": 3, "VEC4": 4, "MAT4": 16}
    types = {5126: "<f4", 5121: "<u1", 5123: "<u2", 5125: "<u4"}

    def accessor(i):
        a = doc["accessors"][i]
        view = doc["bufferViews"][a["bufferView"]]
        start = view.get("byteOffset", 0) + a.get("byteOffset", 0)
        width = widths[a["type"]]
        return np.frombuffer(blob, types[a["componentType"]], a["count"] * width, start).reshape(-1, width).astype(
            np.float64)

    return doc, accessor


def _slerp(a, b, s):
    d = np.sum(a * b, axis=-1, keepdims=True)
    b = np.where(d < 0, -b, b)
    d = np.abs(d)
    angle = np.arccos(np.clip(d, -1, 1))
    sin = np.sin(angle)
    small = sin < 1e-9
    wa = np.where(small, 1 - s, np.sin((1 - s) * angle) / np.where(small, 1, sin))
    wb = np.where(small, s, np.sin(s * angle) / np.where(small, 1, sin))
    return wa * a + wb * b


def curves(doc, accessor, times):
    """Local (translation, rotation x-y-z-w, scale) per node at ``times``: {node: (T, 3|4) arrays} per path."""
    anim = doc["animations"][0]
    out = {"translation": {}, "rotation": {}, "scale": {}}
    for channel in anim["channels"]:
        sampler = anim["samplers"][channel["sampler"]]
        keys = accessor(sampler["input"])[:, 0]
        values = accessor(sampler["output"])
        path = channel["target"]["path"]
        i = np.clip(np.searchsorted(keys, times, side="right") - 1, 0, len(keys) - 2)
        h = keys[i + 1] - keys[i]
        s = np.clip((times - keys[i]) / h, 0, 1)[:, None]
        if sampler["interpolation"] == "CUBICSPLINE":
            v = values.reshape(len(keys), 3, -1)
            p0, b0, p1, a1 = v[i, 1], v[i, 2], v[i + 1, 1], v[i + 1, 0]
            r = ((2 * s**3 - 3 * s**2 + 1) * p0 + h[:, None] * (s**3 - 2 * s**2 + s) * b0
                 + (-2 * s**3 + 3 * s**2) * p1 + h[:, None] * (s**3 - s**2) * a1)
            if path == "rotation":
                r /= np.linalg.norm(r, axis=-1, keepdims=True)
        elif path == "rotation":
            r = _slerp(values[i], values[i + 1], s)
        else:
            r = (1 - s) * values[i] + s * values[i + 1]
        out[path][channel["target"]["node"]] = r
    return out


def matrix(t, q, s):
    """4x4 matrices (T, 4, 4) of translation, rotation (x, y, z, w) and scale, as glTF composes them: T R S."""
    x, y, z, w = np.moveaxis(q, -1, 0)
    r = np.stack([np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
                  np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
                  np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1)], -2)
    m = np.zeros(t.shape[:-1] + (4, 4))
    m[..., :3, :3] = r * s[..., None, :]
    m[..., :3, 3] = t
    m[..., 3, 3] = 1
    return m


def world(doc, local, count):
    """World matrices {node: (T, 4, 4)} of the skin's joints from ``curves`` at ``count`` times (rest where none)."""
    nodes = doc["nodes"]
    parent = {c: i for i, n in enumerate(nodes) for c in n.get("children", [])}
    out = {}

    def get(i):
        if i not in out:
            n = nodes[i]
            t = local["translation"].get(i, np.tile(n.get("translation", [0, 0, 0]), (count, 1)))
            q = local["rotation"].get(i, np.tile(n.get("rotation", [0, 0, 0, 1]), (count, 1)))
            s = local["scale"].get(i, np.tile(n.get("scale", [1, 1, 1]), (count, 1)))
            m = matrix(np.asarray(t, float), np.asarray(q, float), np.asarray(s, float))
            out[i] = get(parent[i]) @ m if i in parent else m
        return out[i]

    return {j: get(j) for j in doc["skins"][0]["joints"]}
