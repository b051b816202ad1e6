"""Branch gates: whether an op runs for a character this frame, and its restart on entering its branch.

An op needed only through one branch of a node (a state of a state machine: ``Node.branch_bits``)
carries a gate per such branch in the op table, ``GATE`` int64 numbers each, in the plan's io
array (``animgraph.plan``)::

    live     offset in the character's state of the branch node's mask of branches needed now
    entered  offset of its mask of branches entered this frame (to restart)
    mask     the branch's bit
    init     offset in ``par`` of this op's initial state row (what a fresh instance holds)

An op runs when every one of its gates is live (nested branches: all of them); on a frame its
branch is entered its state is first set to its initial row, so a state's clips restart.  The
masks are whole numbers held in float64 state (exact below 2**53).
"""

from __future__ import annotations

import numpy as np

from animgraph.jit import njit

GATE = 4
LIVE, ENTERED, MASK, INIT = range(GATE)


@njit(cache=True)
def gate_open(table, a, b, t, x, par):
    """Whether the op whose gates are ``table[a:b]`` runs for the character of state ``t`` (the op's own: ``x``);
    restarts ``x`` from its initial row in ``par`` when one of its branches was entered this frame."""
    for k in range(a, b, GATE):
        if (np.int64(t[table[k + LIVE]]) & table[k + MASK]) == 0:
            return False
    for k in range(a, b, GATE):
        if (np.int64(t[table[k + ENTERED]]) & table[k + MASK]) != 0:
            init = table[k + INIT]
            x[:] = par[init:init + x.shape[0]]
            break
    return True
