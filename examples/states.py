"""Drive the shipped locomotion state machine with a scripted stick, wave twice, and print what changes.

``graphs/states.json``: idle, walking, running and three turns, chosen by the ``speed`` and
``turn`` inputs; every change is an inertialized transition, and only the active state's
nodes run.  The ``wave`` input fires a one-shot over the upper body (the second wave fires
again while the first still plays: it restarts).  ``travel`` is not linked here: see the
README's "State machines".

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
waves = [(1.0, 1.1), (2.5, 2.6)]  # the 'wave' input held true (s): fires on its rising edge
dt, state, waving, held, hips = 1 / 60, None, False, False, plan.skeleton.index("hips")
for frame in range(int(10.0 / dt)):
    t = frame * dt
    _, speed, turn = next(k for k in reversed(script) if t >= k[0])
    wave = any(a <= t < b for a, b in waves)
    out = inst.step(dt, {"speed": speed, "turn": turn, "wave": wave})
    now = names[int(np.ravel(out["state"])[0])]
    if now != state:
        hips_speed = float(np.linalg.norm(out["out"].vel[hips]))
        print(f"  {t:5.2f} s  speed {speed:3.1f}  turn {turn:+4.1f}  -> {now:15} (hips {hips_speed:.2f} m/s)")
        state = now
    if wave and not held:
        print(f"  {t:5.2f} s  wave fired" + (" again (restarts)" if waving else ""))
    held = wave
    if bool(np.ravel(out["waving"])[0]) != waving:
        waving = not waving
        print(f"  {t:5.2f} s  " + ("waving" if waving else "wave blended out"))
print(f"ended in {state} after {10.0:.0f} s")
