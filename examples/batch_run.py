"""Run a shipped graph for a batch of characters, each with its own inputs.

One ``step`` call advances every character in compiled code; an input given as an
array of length B sets each character's value.

Run:  python examples/batch_run.py
"""

import time

import numpy as np

import animgraph as ag
from animgraph import graphs

characters = 100
plan = ag.compile(graphs.path("select_inertialize"), batch=characters)
inst = plan.instance()
print(f"{plan.graph.description}\n{len(plan.order)} ops, {plan.joints} joints, {characters} characters")

clip = np.arange(characters) % 3  # walk, jog, run, walk, ...
inst.step(1 / 60, {"clip": clip})
start = time.perf_counter()
for frame in range(1, 60):
    if frame == 30:
        clip = (clip + 1) % 3  # everyone switches: inertialized over 0.3 s
    out = inst.step(1 / 60, {"clip": clip})["out"]
seconds = (time.perf_counter() - start) / 59

hips = plan.skeleton.index("hips")
speed = np.linalg.norm(out.vel[:, hips], axis=-1)  # (characters,) m/s
for k, name in enumerate(("walk", "jog", "run")):
    print(f"  now playing {name:4}: {np.sum(clip == k):3d} characters, mean hips speed {speed[clip == k].mean():.2f} m/s")
print(f"{seconds * 1e6:.0f} us per step for {characters} characters ({seconds * 1e9 / characters:.0f} ns each)")
