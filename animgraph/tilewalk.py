"""What the lane executor's tile walk (``executor.run_tiles``) does besides calling kernels: pose slots between a
tile and the characters' own slots, and which of the two holds a slot's current value.

A tile is scratch for one frame: every pose slot a tile op reads was written by an earlier op of
the same frame or is copied in from the characters' slots first (``make_current``), and the
outputs are copied out at the end.  So one tile per thread serves every tile the thread walks:
it stays in the core's cache (a 65-joint chain's slots are a few hundred KB), where a tile per
16 characters kept across frames (megabytes for 1000 characters) was fetched from memory again
every frame.  Nothing per character lives in a tile between frames: per-character state
stays in the characters' rows, which is what a reset of chosen ops for chosen characters writes.

Copies run character by character (lane-outer): each character's slot (``vecs[c, f, s]``,
``rots[c, s]``) is contiguous, so its stores are sequential, while the tile side is read at a
stride of ``LANES`` floats from a block of ``BLOCK`` joints in L1.  Lane-inner copies stored every number to a
different character, thousands of bytes apart.

The outputs go to their own arrays, field by field (``out_vecs[k, f]``: (characters, joints, 3), ``out_rots[k]``),
not to the characters' slots: a tile's 16 characters then fill one run of 12 KB per field, which the
memory system streams, where a character's slot is five runs of 780 bytes 2 KB apart (its other slots
between them).  Measured for 1000 characters of 65 joints: 1.0 us a character against 3.9 into the slots (then 0.8, rows
read whole).
"""

from animgraph.jit import njit

from animgraph.lanes import ANG, JOINT, LANES, POS, ROT, SCL, SVL, VEL
from animgraph.views import flat

VEC_CHANNELS = (POS, SCL, VEL, ANG, SVL)  # vecs' fields in order: their first channel in a tile joint


BLOCK = 8  # joints per pass of a copy: their 8 * 19 rows of LANES floats (10 KB) stay in L1 while 16 characters read them


@njit(cache=True)
def slot_out(tile, slot, c0, vecs, rots):
    """Copy pose slot ``slot`` of ``tile`` to characters ``c0 .. c0 + LANES - 1`` of ``vecs`` and ``rots``."""
    joints, slots = rots.shape[2], rots.shape[1]
    v, r = flat(vecs), flat(rots)
    src = slot * joints * JOINT
    for j0 in range(0, joints, BLOCK):
        j1 = min(j0 + BLOCK, joints)
        for lane in range(LANES):
            c = c0 + lane
            for f in range(5):
                d = ((c * 5 + f) * slots + slot) * joints * 3
                s = src + VEC_CHANNELS[f] * LANES + lane
                for j in range(j0, j1):
                    at = s + j * JOINT
                    v[d + 3 * j] = tile[at]
                    v[d + 3 * j + 1] = tile[at + LANES]
                    v[d + 3 * j + 2] = tile[at + 2 * LANES]
            d = (c * slots + slot) * joints * 4
            s = src + ROT * LANES + lane
            for j in range(j0, j1):
                at = s + j * JOINT
                r[d + 4 * j] = tile[at]
                r[d + 4 * j + 1] = tile[at + LANES]
                r[d + 4 * j + 2] = tile[at + 2 * LANES]
                r[d + 4 * j + 3] = tile[at + 3 * LANES]


@njit(cache=True)
def slot_in(tile, slot, c0, vecs, rots):
    """Copy pose slot ``slot`` of characters ``c0 .. c0 + LANES - 1`` (``vecs``, ``rots``) into ``tile``."""
    joints, slots = rots.shape[2], rots.shape[1]
    v, r = flat(vecs), flat(rots)
    dst = slot * joints * JOINT
    for j0 in range(0, joints, BLOCK):
        j1 = min(j0 + BLOCK, joints)
        for lane in range(LANES):
            c = c0 + lane
            for f in range(5):
                s = ((c * 5 + f) * slots + slot) * joints * 3
                d = dst + VEC_CHANNELS[f] * LANES + lane
                for j in range(j0, j1):
                    at = d + j * JOINT
                    tile[at] = v[s + 3 * j]
                    tile[at + LANES] = v[s + 3 * j + 1]
                    tile[at + 2 * LANES] = v[s + 3 * j + 2]
            s = (c * slots + slot) * joints * 4
            d = dst + ROT * LANES + lane
            for j in range(j0, j1):
                at = d + j * JOINT
                tile[at] = r[s + 4 * j]
                tile[at + LANES] = r[s + 4 * j + 1]
                tile[at + 2 * LANES] = r[s + 4 * j + 2]
                tile[at + 3 * LANES] = r[s + 4 * j + 3]


@njit(cache=True)
def make_current(tile, table, at, first, last, pose_io, c0, vecs, rots, current, source, into_tile):
    """Slots read by ports ``first .. last-1`` (io entries from ``at``): copied where they are needed (into the tile,
    or out to the characters) unless ``current`` there already.  Only what is current at the ``source`` is copied:
    a slot current nowhere was not written this frame (its writer was skipped, an inactive branch's), and the op
    reading it does not use it (a state machine reads only its active state's pose)."""
    for k in range(first, last):
        q = table[at + k]
        if pose_io[k] and q >= 0 and not current[q] and source[q]:
            if into_tile:
                slot_in(tile, q, c0, vecs, rots)
            else:
                slot_out(tile, q, c0, vecs, rots)
            current[q] = True


@njit(cache=True)
def mark_written(table, at, first, last, pose_io, here, there):
    """Slots written by ports ``first .. last-1`` (io entries from ``at``): current ``here``, stale ``there``."""
    for k in range(first, last):
        if pose_io[k]:
            here[table[at + k]] = True
            there[table[at + k]] = False


@njit(cache=True)
def slot_to_output(tile, slot, k, c0, out_vecs, out_rots):
    """Copy pose slot ``slot`` of ``tile`` to output ``k`` (``out_vecs[k]``, ``out_rots[k]``) of characters ``c0 ..``."""
    # Each channel's LANES floats are read as one row (contiguous loads); measured 0.8 against 1.1 us a
    # character lane by lane.
    joints = out_rots.shape[2]
    src = slot * joints * JOINT
    for f in range(5):
        ch = VEC_CHANNELS[f] * LANES
        dst = out_vecs[k, f, c0:c0 + LANES]
        for j in range(joints):
            at = src + j * JOINT + ch
            for i in range(3):
                row = tile[at + i * LANES:at + (i + 1) * LANES]
                for lane in range(LANES):
                    dst[lane, j, i] = row[lane]
    dst = out_rots[k, c0:c0 + LANES]
    for j in range(joints):
        at = src + j * JOINT + ROT * LANES
        for i in range(4):
            row = tile[at + i * LANES:at + (i + 1) * LANES]
            for lane in range(LANES):
                dst[lane, j, i] = row[lane]


@njit(cache=True)
def chars_to_output(slot, k, c0, vecs, rots, out_vecs, out_rots):
    """Copy pose slot ``slot`` of characters ``c0 .. c0 + LANES - 1`` (``vecs``, ``rots``) to output ``k``."""
    joints = rots.shape[2]
    for lane in range(LANES):
        c = c0 + lane
        for f in range(5):
            for j in range(joints):
                for i in range(3):
                    out_vecs[k, f, c, j, i] = vecs[c, f, slot, j, i]
        for j in range(joints):
            for i in range(4):
                out_rots[k, c, j, i] = rots[c, slot, j, i]
