"""Cross-fades of whole poses: dead blending (from the extrapolated old pose) and a plain crossfade.

Dead blending:
On a transition at time T the node keeps what it showed, coasted one frame on as the fade
will coast it (so it is the pose at T and nothing pops; however long that frame, the snapshot
moves at most ``v0 / λ`` and turns at most ``MAX_TURN``), and extrapolates it with velocities
decaying at ``λ = ln2 / halflife`` (exact, ``animgraph.decay``): ``p(t) = p0 + v0 (1 -
e^-λt)/λ``, ``v(t) = v0 e^-λt``, log-scales likewise.  The output fades from that pose to
the input with the smoothstep weight ``α = 3s² - 2s³``, ``s = t / duration``, ``α' = 6 s
(1 - s) / duration``, whose rate enters every velocity: positions lerp, scales lerp in log
space.  After ``duration`` the output is the input.  A zero duration is a cut; a zero
half-life holds the old pose still.

Rotations: ``rot = exp(α D) exp((1-α) γ) g0``, two arcs known from the transition snapshot,
the elapsed time and the current input alone, so any steps reaching ``t`` give the same
pose.  ``γ = w0 (1 - e^-κt)/κ`` is the old rotation ``g0``'s extrapolated turn (closed form,
fixed axis); ``D = log(b g0⁻¹)`` the current input ``b`` seen from the rotation shown at
the transition, the short way (|D| <= π), turning at ``dD/dt = J⁻¹(D) w_b`` (the inverse
left Jacobian of the input's angular velocity), so ``α = 1`` lands exactly on ``b``.
``κ = max(λ, |w0| / MAX_TURN)`` caps the extrapolated turn at a quarter turn, from the same
starting rate: mocap jitter (a toe at 54 rad/s) coasts instead of spinning turns that the
fade must then unwind.  The angular speed is at most the input's plus the extrapolation's
plus ``α' (|D| + |γ|)`` (with |D| <= π the factor from the input's rate to the arc's is at
most 1).  A plain blend's shortest arc from the extrapolated pose to the input flips where
that moving arc passes a half turn (a pop of α 2π); here the arc starts at the fixed
``g0``, so it flips only where the input itself passes half a turn from what was shown.
No closed form can avoid such a flip for every input: the fade would be a homotopy from a
constant map of SO(3) to the identity, which does not exist.  Following the input past it
would need its turn since the transition, which only a per-step history knows (and then
the pose depends on the steps).

A plain crossfade (``crossfade_kernel``) blends two live poses with the same smoothstep weight,
its rate entering the velocities (``maths.blend_kform``); a layered one (``layer_kernel``)
blends each joint at the weight times its mask weight (``animgraph.branches``), joints
outside the mask staying the base exactly.  Used by the ``dead_blend``, ``state_machine``,
``layered_blend`` and ``one_shot`` nodes.
"""

import math

from animgraph.jit import njit

from .decay import coast, kform_extrapolate
from .maths import (
    blend_kform,
    from_scaled_angle_axis,
    load_kform,
    qinv,
    qmul,
    qrot,
    store_kform,
    to_scaled_angle_axis_dx,
    vadd,
    vexp,
    vlen,
    vlerp,
    vlog,
    vscale,
    vsub,
    weighted_rot,
)

MAX_TURN = 0.5 * math.pi  # most the extrapolated rotation turns in total (rad)


@njit(cache=True)
def smoothstep(t, duration):
    """Weight of the live input ``t`` s into a cross-fade of ``duration`` s, and its rate (1/s)."""
    if duration <= 0.0 or t >= duration:
        return 1.0, 0.0
    s = max(t / duration, 0.0)
    return s * s * (3.0 - 2.0 * s), 6.0 * s * (1.0 - s) / duration


@njit(cache=True)
def coasting_turn(ang, rate, t):
    """Turn (rad, rotation vector) and rate ``t`` s on from ``ang`` decaying at ``rate`` 1/s or faster (MAX_TURN)."""
    dist, fade = coast(max(rate, vlen(ang) / MAX_TURN), t)
    return vscale(ang, dist), vscale(ang, fade)


@njit(cache=True)
def fade_rot(old_rot, old_ang, rate, t, rot, ang, alpha, alpha_vel):
    """``exp(α D) exp((1-α) γ) g0`` and its angular velocity (rad/s), see the module docstring.

    ``rot`` is the current input, turning at ``ang``; ``old_rot``, ``old_ang`` the snapshot.
    """
    gap, _, gap_vel = to_scaled_angle_axis_dx(qmul(rot, qinv(old_rot)), ang)
    gamma, gamma_vel = coasting_turn(old_ang, rate, t)
    e1, w1 = weighted_rot(gap, gap_vel, alpha, alpha_vel)
    e3, w3 = weighted_rot(gamma, gamma_vel, 1.0 - alpha, -alpha_vel)
    return qmul(e1, qmul(e3, old_rot)), vadd(w1, qrot(e1, w3))


@njit(cache=True)
def fade_kform(old, inp, rate, t, alpha, alpha_vel):
    """Kineform of ``old`` extrapolated ``t`` s, faded into ``inp`` by weight ``alpha`` moving at ``alpha_vel``."""
    ap, _, asc, av, _, asv = kform_extrapolate(old, rate, t)
    bp, br, bsc, bv, bw, bsv = inp
    pos = vlerp(ap, bp, alpha)
    vel = vadd(vlerp(av, bv, alpha), vscale(vsub(bp, ap), alpha_vel))
    rot, ang = fade_rot(old[1], old[4], rate, t, br, bw, alpha, alpha_vel)
    la = vlog(asc)
    lb = vlog(bsc)
    scl = vexp(vlerp(la, lb, alpha))
    svl = vadd(vlerp(asv, bsv, alpha), vscale(vsub(lb, la), alpha_vel))
    return (pos, rot, scl, vel, ang, svl)


@njit(cache=True)
def dead_blend_kernel(old, inp, rate, duration, t, out):
    """Pose ``old`` extrapolated ``t`` s (velocities decaying at ``rate`` 1/s) faded into ``inp``; into ``out``."""
    alpha, alpha_vel = smoothstep(t, duration)
    for j in range(out[0].shape[0]):
        store_kform(out, j, fade_kform(load_kform(old, j), load_kform(inp, j), rate, t, alpha, alpha_vel))


@njit(cache=True)
def coast_kform(k, rate, t):
    """Kineform ``k`` coasted ``t`` s on as a dead blend extrapolates it: velocities decaying at ``rate`` (1/s), the
    turn as ``coasting_turn`` (capped at MAX_TURN)."""
    pos, _, scl, vel, _, svl = kform_extrapolate(k, rate, t)
    turn, ang = coasting_turn(k[4], rate, t)
    return (pos, qmul(from_scaled_angle_axis(turn), k[1]), scl, vel, ang, svl)


@njit(cache=True)
def carry_pose(src, rate, ahead, out):
    """Pose ``src`` coasted ``ahead`` s on (``coast_kform``), into ``out``: the pose shown a step ago, brought to now."""
    for j in range(out[0].shape[0]):
        store_kform(out, j, coast_kform(load_kform(src, j), rate, ahead))


@njit(cache=True)
def fade_motion(sig, at, out, last, old, fading, record, transition, rate, duration, t):
    """Root motion ``sig[at:at+6]`` faded in from the old one into ``sig[out:out+6]``.

    ``last`` (6) is the last output, ``old`` (6) the old motion (the last output at the
    transition) and ``fading[0]`` whether a fade runs: the node's state.  The old motion
    coasts like the old pose's velocities, decaying at ``rate`` (1/s), and the input fades
    in with the same smoothstep weight, so the velocity the output node integrates does not
    step.
    """
    if transition:
        fading[0] = 1.0 if record and duration > 0.0 else 0.0
        for c in range(6):
            old[c] = last[c]
    if t >= duration:
        fading[0] = 0.0
    alpha = smoothstep(t, duration)[0] if fading[0] > 0.5 else 1.0
    fade = coast(rate, t)[1]
    for c in range(6):
        value = alpha * sig[at + c] + (1.0 - alpha) * fade * old[c]
        sig[out + c] = value
        last[c] = value


@njit(cache=True)
def crossfade_kernel(a, b, alpha, alpha_vel, out):
    """Pose ``a`` blended into pose ``b`` by weight ``alpha`` moving at ``alpha_vel`` (1/s), joint by joint, into ``out``."""
    for j in range(out[0].shape[0]):
        store_kform(out, j, blend_kform(load_kform(a, j), load_kform(b, j), alpha, alpha_vel))


@njit(cache=True, error_model="numpy", own_code=True)
def layer_kernel(base, layer, mask, alpha, alpha_vel, out):
    """Pose ``base`` blended towards ``layer`` joint by joint at weight ``alpha mask[j]`` (rate ``alpha_vel mask[j]``,
    1/s) into ``out``; a joint of weight 0 is the base's row exactly."""
    for j in range(out[0].shape[0]):
        w = alpha * mask[j]
        if w == 0.0 and alpha_vel * mask[j] == 0.0:
            store_kform(out, j, load_kform(base, j))
        else:
            store_kform(out, j, blend_kform(load_kform(base, j), load_kform(layer, j), w, alpha_vel * mask[j]))
