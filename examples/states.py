"""Drive the shipped locomotion state machine with a scripted stick and print its state changes.

``graphs/states.json``: idle, walking, running and three turns, chosen by the ``speed`` and
``turn`` inputs; every change is an inertialized transition, and only the active state's
nodes run.  ``travel`` is not linked here: see the README's "State machines".

Run:  python examples/states.py
"""

import numpy as np

import animgraph as ag
from animgraph import graphs

plan = ag.compile(graphs.path("states"))
inst = plan.instance()
machine = plan.nodes["loco"]
names = [s.name for s in machine.states]
print(f"{plan.graph.description}\nstates: {', '.join(names)}")

# (time s, speed m/s, turn): stand, walk, turn left while walking, run, turn right while running, stop.
script = [(0.0, 0.0, 0.0), (0.5, 1.2, 0.0), (2.0, 1.2, 1.0), (2.3, 1.2, 0.0), (4.5, 3.5, 0.0), (6.0, 3.5, -1.0),
          (6.3, 3.5, 0.0), (8.5, 0.0, 0.0)]
dt, state, hips = 1 / 60, None, plan.skeleton.index("hips")
for frame in range(int(10.0 / dt)):
    t = frame * dt
    _, speed, turn = next(k for k in reversed(script) if t >= k[0])
    out = inst.step(dt, {"speed": speed, "turn": turn})
    now = names[int(np.ravel(out["state"])[0])]
    if now != state:
        hips_speed = float(np.linalg.norm(out["out"].vel[hips]))
        print(f"  {t:5.2f} s  speed {speed:3.1f}  turn {turn:+4.1f}  -> {now:15} (hips {hips_speed:.2f} m/s)")
        state = now
print(f"ended in {state} after {10.0:.0f} s")
