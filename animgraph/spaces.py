"""Blend spaces' shared kernels: the blend of the (at most three) live entries, and their root motions.

The live entries come in ascending entry order with weights ``w`` (> 0, summing to 1) and
rates ``w'`` (1/s).  One entry is its pose.  Two are the two-way blend ``blend(p0, p1, w1)``
at rate ``w1'`` (``maths.blend_kform``: lerp, shortest slerp, eerp, and the weight's rate
term).  Three are two nested two-way blends::

    q = blend(p0, p1, a),  a = w1 / (w0 + w1),  a' = (w1' w0 - w1 w0') / (w0 + w1)^2
    out = blend(q, p2, w2),  at rate w2'

whose positions are ``w0 p0 + w1 p1 + w2 p2`` exactly, with velocities the exact derivative:
each blend's own velocity term carries its weight's rate, and ``q``'s velocity (with its
``a'`` term) enters the outer blend as an input's.  On an edge of the triangle (one weight 0)
the nesting reduces to the two-way blend of the other two in ascending order, as the two-entry
case computes it, so the pose is continuous where the live set changes; in ascending order
whatever the triangle, the same pair always blends the same way round.  ``q`` is computed per
joint in float64 and never stored, so ``a'`` growing near ``p2`` (``w0 + w1 -> 0``, where
``(w0 + w1) a'`` stays bounded) costs no precision: the weight spaces count weights below
``LIVE_MIN`` as 0 (not live), so ``w0 + w1 >= 2e-12`` and its square is a normal float64.

Root motion (the simulation bone's velocity and angular velocity, themselves rates) is the
weighted sum of the live entries' (an unlinked one: still), as the ``blend`` node lerps two.

Also the entries' naming rules both nodes' files check (``refuse_entry_names``) and the
editor's link renaming (``renamed_ports``): an entry's name is its pose input's, and
``<name>_motion`` and ``<name>_weight`` are its other ports.
"""

from animgraph.jit import njit

from .fades import crossfade_kernel
from .kernels import copy_pose
from .maths import blend_kform, load_kform, store_kform

IDENTIFIER = r"^[A-Za-z_][A-Za-z0-9_]*$"  # an entry's name
GROUP = r"^([A-Za-z_][A-Za-z0-9_]*)?$"  # a sync group's name; "": the node's id
FIXED_PORTS = ("pose", "motion", "parameter")
ENTRY_PORTS = ("", "_motion", "_weight")  # an entry's ports: its name with these ends
MOTION = 6  # a root-motion signal's floats
LIVE_MIN = 1e-12  # a weight below this counts as 0: the entry is not live (the rest renormalized)


@njit(cache=True, error_model="numpy")
def blend_entries(p0, p1, p2, count, w, dw, out):
    """The blend of the ``count`` live entries' pose tuples ``p0``, ``p1``, ``p2`` (ascending order; unused ones any
    pose) at weights ``w`` and rates ``dw`` (1/s) into ``out`` (module doc)."""
    if count == 1:
        copy_pose(p0, out)
        return
    if count == 2:
        crossfade_kernel(p0, p1, w[1], dw[1], out)
        return
    s = w[0] + w[1]
    if not s > 0.0:  # not from the weight spaces (their live weights are >= LIVE_MIN)
        copy_pose(p2, out)
        return
    a, da = w[1] / s, (dw[1] * w[0] - w[1] * dw[0]) / (s * s)
    for j in range(out[0].shape[0]):
        q = blend_kform(load_kform(p0, j), load_kform(p1, j), a, da)
        store_kform(out, j, blend_kform(q, load_kform(p2, j), w[2], dw[2]))


@njit(cache=True)
def blend_motions(sig, motions, idx, count, w, out):
    """Root motion at ``sig[out:out + 6]``: the weighted sum of the live entries' (``motions[idx[k]]`` their offsets
    in ``sig``, -1 unlinked: still)."""
    for c in range(MOTION):
        sig[out + c] = 0.0
    for k in range(count):
        at = motions[int(idx[k])]
        if at >= 0:
            for c in range(MOTION):
                sig[out + c] += w[k] * sig[at + c]


@njit(cache=True)
def publish_weights(outs, first, sig, n, count, idx, w, dw):
    """Write every entry's weight output (``outs[first + e]``: weight and rate, 0 unless live); the live mask (a bit
    per live entry)."""
    for e in range(n):
        o = outs[first + e]
        sig[o], sig[o + 1] = 0.0, 0.0
    live = 0
    for k in range(count):
        e = int(idx[k])
        o = outs[first + e]
        sig[o], sig[o + 1] = w[k], dw[k]
        live |= 1 << e
    return live


def refuse_entry_names(names):
    """A ValueError for an entry name used twice or colliding with a port name."""
    seen = set()
    for name in names:
        if name in seen:
            raise ValueError(f"entry {name!r} appears twice")
        if name in FIXED_PORTS or name.endswith(ENTRY_PORTS[1:]):
            raise ValueError(f"entry {name!r} collides with a port name (pose, motion, parameter, <entry>_motion, "
                             f"<entry>_weight)")
        seen.add(name)


def renamed_ports(old, new):
    """{old port: new port} of the entries renamed from ``old`` to ``new`` (a node's JSON fields, as the editor edits
    them); {} unless both hold lists of entries of one length."""
    before, after = old.get("entries"), new.get("entries")
    if not (isinstance(before, list) and isinstance(after, list) and len(before) == len(after)):
        return {}
    names = {a.get("name"): b.get("name") for a, b in zip(before, after)
             if isinstance(a, dict) and isinstance(b, dict) and a.get("name") != b.get("name")}
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in names.items()):
        return {}
    return {f"{a}{end}": f"{b}{end}" for a, b in names.items() for end in ENTRY_PORTS}
