"""Branch gates: whether an op runs for a character this frame, and its restart on entering its branch.

An op needed only through one branch of a node (a state of a state machine: ``Node.branch_bits``)
carries a gate per such branch in the op table, ``GATE`` int64 numbers each, in the plan's io
array (``animgraph.plan``)::

    live     offset in the character's state of the branch node's mask of branches needed now
    entered  offset of its mask of branches entered this frame (to restart)
    mask     the branch's bit
    init     offset in ``par`` of this op's initial state row (what a fresh instance holds)
    why      offset of the branch node's detail for its branches left (``animgraph.events.REASONS``:
             a state machine's ``state_left``, a one-shot's ``aborted`` or ``ended``, a blend space's
             ``weight``), or -1 for none
    leaving  offset of its mask of branches that run this frame only to show where a transition
             starts (a state left from rest: at weight 0), or -1 for none

An op runs when every one of its gates is live (nested branches: all of them); on a frame its
branch is entered its state is first set to its initial row, so a state's clips restart.  The
masks are whole numbers held in float64 state (exact below 2**53).

Before any of these -- its branch left, leaving, or about to restart -- an op whose node type has a *closing*
kernel (``register(..., closing=...)``: a sample's open event ranges) gets it called with the
detail ``gate_why`` gives, so every range it opened ends when its branch stops or restarts it.
"""

from __future__ import annotations

import numpy as np

from animgraph.jit import njit

GATE = 6
LIVE, ENTERED, MASK, INIT, WHY, LEAVING = range(GATE)


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
            for j in range(x.shape[0]):  # a loop: an array copy would compile numba's shape-error message (1.5 s)
                x[j] = par[init + j]
            break
    return True


@njit(cache=True)
def gate_why(table, a, b, t):
    """The detail id (``animgraph.events``) the op whose gates are ``table[a:b]`` closes with this frame, for the
    character of state ``t``: its first branch not live, else its first branch entered (a restart) or leaving; -1:
    none."""
    for k in range(a, b, GATE):
        if (np.int64(t[table[k + LIVE]]) & table[k + MASK]) == 0:
            return _why(table, k, t)
    for k in range(a, b, GATE):
        if (np.int64(t[table[k + ENTERED]]) & table[k + MASK]) != 0:
            return _why(table, k, t)
        if table[k + LEAVING] >= 0 and (np.int64(t[table[k + LEAVING]]) & table[k + MASK]) != 0:
            return _why(table, k, t)
    return -1.0


@njit(cache=True)
def _why(table, k, t):
    """Gate ``k``'s detail id: the branch node's field, or 0 (no detail)."""
    return t[table[k + WHY]] if table[k + WHY] >= 0 else 0.0
