"""Run a graph and write its pose as glTF 2.0, the exact velocities as the cubic keys' tangents; read it back.

Run:  python examples/export_gltf.py     (then open blend.glb in Blender, three.js or any glTF viewer)
"""

import numpy as np

import animgraph as ag
from animgraph import graphs

rate, every = 120, 4  # Hz, and a key at every 4th frame: the tangents carry the curve between keys
plan = ag.compile(graphs.path("blend"))
inst = plan.instance()
frames = [inst.step(1 / rate, {"alpha": 0.5})["out"].copy() for _ in range(2 * rate + 1)]  # local poses
pose = ag.Pose(*(np.stack([getattr(p, f) for p in frames])[::every] for f in ag.pose.FIELDS))

skel = plan.skeleton  # the skeleton of the graph's clips
clip = ag.Clip(skel, pose.pos, pose.rot, pose.scl, dt=every / rate, name="blend")
written = ag.save_gltf("blend.glb", skel, clip, vel=pose.vel, ang=pose.ang, svl=pose.svl)
print(f"wrote {written[0]}: {len(skel)} joints, {clip.frames} cubic keys (every {every}th of "
      f"{len(frames)} frames at {rate} Hz)")

skel2, clip2 = ag.load_gltf("blend.glb")
print(f"read back {clip2}: largest position change at the keys {np.abs(clip2.pos - clip.pos).max():.1e} m")
