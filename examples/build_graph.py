"""Build a graph in Python, compile it and step it, changing an input as it runs.

The graph plays the walk and the jog and blends them by the input "alpha"; the
blend weight's rate goes in with it, so the velocities include the changing mix.

Run:  python examples/build_graph.py
"""

import math

import numpy as np

import animgraph as ag

graph = ag.Graph.from_dict({
    "format": "animgraph.graph",
    "version": 1,
    "description": "walk to jog by the input alpha",
    "assets": {"walk": "animgraph:walk", "jog": "animgraph:jog"},
    "nodes": [
        {"id": "walk", "type": "sample", "clip": "walk", "loop": False},
        {"id": "jog", "type": "sample", "clip": "jog", "loop": False},
        {"id": "alpha", "type": "input", "signal": "scalar", "default": 0.0},
        {"id": "mix", "type": "blend"},
        {"id": "world", "type": "fk"},
        {"id": "out", "type": "output"},
    ],
    "links": [
        ["walk.pose", "mix.a"], ["jog.pose", "mix.b"], ["alpha.value", "mix.alpha"],
        ["mix.pose", "world.pose"], ["world.pose", "out.pose"],
    ],
})

plan = ag.compile(graph, batch=1)  # checks, plans and loads the compiled executor
inst = plan.instance()
head = plan.skeleton.index("head")
dt = 1 / 60

print(" frame  alpha  head height (m)  head speed (m/s)")
for frame in range(90):
    t = frame * dt
    alpha, rate = 0.5 - 0.5 * math.cos(2.0 * t), math.sin(2.0 * t)  # weight and its rate (1/s)
    out = inst.step(dt, {"alpha": (alpha, rate)})["out"]  # views: copy what you keep
    if frame % 15 == 0:
        print(f"{frame:6d}  {alpha:5.2f}  {out.pos[head, 1]:15.3f}  {np.linalg.norm(out.vel[head]):16.3f}")

graph.save("walk_to_jog.json")  # the same graph as a file: animgraph run walk_to_jog.json --frames 60
print("saved walk_to_jog.json")
