"""Look-at: turn one joint so its forward axis points at a moving target, velocities exact.

With ``g`` the joint's global kineform (FK along its ancestors), forward axis ``f``
(joint frame) and target ``(p, v)`` in model space:

- current direction ``u = g.rot f``, ``du = g.ang x u``;
- target direction ``d = (p - g.pos)/|...|``, ``dd = normalize_dx(p - g.pos, v - g.vel)``;
- ``q = qbetween(u, d)`` turning at ``qbetween_dx(u, du, d, dd)``;
- weighted: ``q^w = exp(w log q)`` (slerp from identity), its rate through the exp map's Jacobian;
- new global rotation ``q^w g.rot``, angular velocity ``w_q + q^w g.ang``, brought back to
  the local rotation with ``kdiv`` by the parent's global kineform.

Defined degenerate cases: a target at the joint, or a zero forward axis, leaves the
pose as is; a target straight behind turns half way round (velocity zero there).
"""

from typing import Literal

from animgraph.jit import njit
from pydantic import Field, field_validator

from animgraph.args import check_axis, joint_index, per_item, skeleton_parents
from animgraph.kernels import copy_pose, joint_global, set_global_rotation
from animgraph.maths import qbetween, qbetween_dx, qmul, qrot, vadd, vcross, vlen, vnormalize, vnormalize_dx, vsub
from animgraph.maths import weighted_rotation
from animgraph.limits import AXIS_MAX, INDEX_MAX, Axis, JointName, unit_field
from animgraph.node import DB_PARENTS, Node, Port, fields, port_indices, register, slot
from animgraph.pose import Pose, number
from animgraph.stencil import ramp, stencil

TINY = 1e-9

INPUTS = (
    Port("pose", "pose", "local", "parent-relative pose"),
    Port("target", "vec3", "", "point to look at in model space (m, m/s)"),
    Port("weight", "scalar", "", "blend weight with its rate (1/s); the field when unlinked", optional=True),
)
OUTPUTS = (Port("pose", "pose", "local", "parent-relative pose with the joint turned"),)
IN, OUT = port_indices("LookAtIn", INPUTS), port_indices("LookAtOut", OUTPUTS)
# joint index, forward axis (joint frame) (weight: a signal always, the planner feeds an unlinked port its field)
PAR = fields("LookAtPar", joint=1, forward=3)


@njit(cache=True)
def look_at_delta(g, fwd, tpos, tvel, w, dw):
    """Global rotation delta and its angular velocity (rad/s) turning axis ``fwd`` of kineform ``g`` to the target."""
    u_raw = qrot(g[1], fwd)
    d_raw = vsub(tpos, g[0])
    if vlen(u_raw) < TINY or vlen(d_raw) < TINY:
        return (1.0, 0.0, 0.0, 0.0), (0.0, 0.0, 0.0)
    u = vnormalize(u_raw)
    du = vnormalize_dx(u_raw, vcross(g[4], u_raw))
    d = vnormalize(d_raw)
    dd = vnormalize_dx(d_raw, vsub(tvel, g[3]))
    return weighted_rotation(qbetween(u, d), qbetween_dx(u, du, d, dd), w, dw)


@njit(cache=True)
def look_at_kernel(local, parents, j, fwd, tpos, tvel, w, dw, out):
    """Local pose tuple ``out``: ``local`` with joint ``j`` turned so ``fwd`` points at the target."""
    copy_pose(local, out)
    look_at_in_place(out, parents, j, fwd, tpos, tvel, w, dw)


@njit(cache=True)
def look_at_in_place(out, parents, j, fwd, tpos, tvel, w, dw):
    """``look_at_kernel`` on local pose tuple ``out`` itself: only joint ``j`` is written."""
    g = joint_global(out, parents, j)
    q, ang = look_at_delta(g, fwd, tpos, tvel, w, dw)
    set_global_rotation(out, parents, j, qmul(q, g[1]), vadd(ang, qrot(q, g[4])))


@njit(cache=True, own_code=True)  # a call, not inlined (node.py): its work is far more than the call
def look_at_node(ins, outs, par, st, pose, sig, db, dt):
    """The executor's call: turn the joint of the input pose towards the target signal, into the output slot."""
    t = ins[IN.target]
    tpos = (sig[t], sig[t + 1], sig[t + 2])
    tvel = (sig[t + 3], sig[t + 4], sig[t + 5])
    w, dw = sig[ins[IN.weight]], sig[ins[IN.weight] + 1]
    fwd = (par[PAR.forward], par[PAR.forward + 1], par[PAR.forward + 2])
    j = int(par[PAR.joint])
    out = slot(pose, outs[OUT.pose])
    if ins[IN.pose] != outs[OUT.pose]:  # else in place (IN_PLACE)
        copy_pose(slot(pose, ins[IN.pose]), out)
    look_at_in_place(out, db[DB_PARENTS], j, fwd, tpos, tvel, w, dw)


@register(look_at_node)
class LookAt(Node):
    """Turns one joint so its ``forward`` axis points at the target (model space)."""

    type: Literal["look_at"] = "look_at"
    joint: JointName = Field(description=f"joint to turn, e.g. head (a name, or an index 0..{INDEX_MAX})")
    forward: Axis = Field(
        (0.0, 0.0, 1.0), description=f"forward axis in the joint's frame (components within ±{AXIS_MAX:g}, not all 0)"
    )
    weight: float = unit_field(1.0, "0 leaves the pose, 1 looks straight at the target")

    CATEGORY = "IK"
    IN_PLACE = {"pose": "pose"}
    FIELD_KINDS = {"joint": "joint", "forward": "axis"}
    INPUTS = INPUTS
    OUTPUTS = OUTPUTS

    @field_validator("forward")
    @classmethod
    def _forward_nonzero(cls, v):
        return check_axis(v, "forward")

    def params(self, ctx):
        j = ctx.joint(self, "joint", self.joint)
        return PAR.pack(joint=j, forward=self.forward)


def look_at(local, parents, joint, target_pos, target_vel=(0.0, 0.0, 0.0), forward=(0.0, 0.0, 1.0), weight=1.0,
            weight_vel=0.0):
    """Local pose with ``joint`` turned so its ``forward`` axis (joint frame) points at the target.

    ``parents`` a Skeleton (joint names work) or a parents array; target position (m)
    and velocity (m/s) in model space, shape (3,) or the pose's batch shape + (3,);
    ``weight`` in [0, 1] with rate ``weight_vel`` (1/s).  Angular velocities are exact.
    """
    parents, skel = skeleton_parents(parents, local)
    j = joint_index(skel, parents, joint)
    fwd = check_axis(forward, "forward")
    out = Pose.identity(local.joints, local.batch)
    tp = per_item(target_pos, local.batch, 3, "target_pos")
    tv = per_item(target_vel, local.batch, 3, "target_vel")
    weight, weight_vel = number(weight, "weight", 0.0, 1.0), number(weight_vel, "weight_vel")
    for n, (src, dst) in enumerate(zip(local.items(), out.items())):
        look_at_kernel(src, parents, j, fwd, tuple(tp[n]), tuple(tv[n]), weight, weight_vel, dst)
    return out


def verify_look_at(m, t, h, rng):
    """The head looks at a point swinging in front of the hips, the weight ramping."""

    def f(s):
        return look_at(m.pose(s), m.skel, m.head, *m.look_target(s), (0.0, 0.0, 1.0), *ramp(s - t))

    return [stencil(f, t, h)]


LookAt.OP, LookAt.VERIFY = look_at, verify_look_at
