"""Load a bundled clip and print joint velocities: propagated exactly, and a finite difference beside them.

Run:  python examples/clip_velocities.py
"""

import numpy as np

import animgraph as ag

skel, clip = ag.data.load("walk")  # metres, 120 fps, CMU joint names plus canonical aliases
print(f"{clip} of {skel}")

t, h = 1.004, 1e-3  # seconds: t +- h inside one key segment, where the cubic is smooth
local = ag.ops.sample(clip, t, mode="cubic")  # local pose with exact velocities
world = ag.ops.fk(local, skel.parents)  # model space: velocities include the leverage terms

# Central difference of the positions, for comparison.
before = ag.ops.fk(ag.ops.sample(clip, t - h, mode="cubic"), skel.parents)
after = ag.ops.fk(ag.ops.sample(clip, t + h, mode="cubic"), skel.parents)
fd = (after.pos - before.pos) / (2 * h)

print(f"\njoint velocities at t = {t} s (m/s, model space)")
print(f"{'joint':12} {'propagated':>28} {'central difference':>28}  speed  |diff|")
for name in ("hips", "left_knee", "left_toe", "head", "right_hand"):
    j = skel.index(name)
    v, d = world.vel[j], fd[j]
    print(f"{name:12} {np.array2string(v, precision=3):>28} {np.array2string(d, precision=3):>28}"
          f"  {np.linalg.norm(v):5.2f}  {np.linalg.norm(v - d):.1e}")

j = skel.index("head")
print(f"\nhead angular velocity {np.round(world.ang[j], 3)} rad/s "
      f"({np.degrees(np.linalg.norm(world.ang[j])):.1f} deg/s)")
