"""The preview half of the editor window: 3D viewport, transport, graph inputs, plots and pop marks.

The skeleton is drawn in a dearpygui drawlist through ``OrbitCamera.project`` (a perspective
transform): ground grid, bones, the root trail, and optionally each joint's propagated
velocity (green) beside its central finite difference (orange, one frame late, as it needs
the next frame).  Left drag orbits, right drag pans, the wheel zooms.
"""

from __future__ import annotations

import numpy as np

import dearpygui.dearpygui as dpg

from .actions import Actions
from .camera import OrbitCamera

WIDTH, HEIGHT = 560, 380
TIMELINE = 380  # pixels
ARROW_SECONDS = 0.1  # a velocity arrow is the distance covered in this time
SPEEDS = ("0.1x", "0.25x", "0.5x", "1x", "2x")
MAX_STEPS_PER_TICK = 4  # playback never falls further behind than this per drawn frame
EVENT_TICK = (120, 200, 230)
EVENTS_LISTED = 6  # the last events listed under the timeline


class Viewport:
    """Viewport, transport, inputs and plots bound to ``editor.player`` (None until the kernels are ready)."""

    def __init__(self, editor):
        self.editor = editor
        self.camera = OrbitCamera()
        self.playing = True
        self.speed = 1.0
        self.owed = 0.0  # seconds of playback not yet stepped
        self.framed = False
        self.drag = None
        self.input_items = {}
        self.series = []
        self._plot_tick = 0
        self.actions = Actions(self)
        self.event_ticks = 0  # frames with events marked on the timeline

    @property
    def player(self):
        return self.editor.player

    # ------------------------------------------------------------ layout

    def build_view(self, parent):
        """The 3D view and what it is showing."""
        dpg.add_text("", tag="preview_state", parent=parent)
        dpg.add_drawlist(WIDTH, HEIGHT, tag="view3d", parent=parent)
        with dpg.handler_registry():
            dpg.add_mouse_drag_handler(button=dpg.mvMouseButton_Left, threshold=1, callback=self._on_drag,
                                       user_data="orbit")
            dpg.add_mouse_drag_handler(button=dpg.mvMouseButton_Right, threshold=1, callback=self._on_drag,
                                       user_data="pan")
            dpg.add_mouse_release_handler(callback=lambda: setattr(self, "drag", None))
            dpg.add_mouse_wheel_handler(callback=self._on_wheel)

    def build_controls(self, parent):
        """Transport, timeline with pop marks, and the graph's inputs."""
        with dpg.group(parent=parent):
            with dpg.group(horizontal=True):
                dpg.add_button(label="pause", tag="play_button", width=60, callback=self.toggle_play)
                dpg.add_button(label="step", tag="step_button", width=50, callback=self.step_once)
                dpg.add_button(label="reset", tag="reset_button", width=50, callback=self.reset)
                dpg.add_combo(SPEEDS, default_value="1x", width=70, callback=lambda s, a: self._speed(a))
            with dpg.group(horizontal=True):
                dpg.add_checkbox(label="velocities", tag="show_vel", default_value=True)
                dpg.add_checkbox(label="follow", tag="follow", default_value=True)
                dpg.add_checkbox(label="loop preview", tag="loop_preview", default_value=True)
            dpg.add_slider_int(label="frame", tag="timeline", width=TIMELINE, min_value=0, max_value=1,
                               callback=lambda s, a: self.seek(a))
            dpg.add_drawlist(TIMELINE, 10, tag="pop_marks")
            dpg.add_text("", tag="pop_text", wrap=TIMELINE + 40, color=(255, 170, 60))
            dpg.add_text("", tag="event_list", color=(120, 200, 230))
            dpg.add_separator()
            dpg.add_text("Inputs")
            dpg.add_group(tag="inputs")
            dpg.add_separator()
        self.actions.build(parent)

    def build_plot(self, parent):
        """Up to three channels over time."""
        with dpg.group(parent=parent):
            with dpg.group(horizontal=True):
                for k in range(3):
                    dpg.add_combo([], width=150, tag=f"channel_{k}", callback=lambda s, a: self.update_plot(True))
            with dpg.plot(height=-1, width=-1, tag="plot"):
                dpg.add_plot_legend()
                dpg.add_plot_axis(dpg.mvXAxis, label="frame", tag="plot_x")
                dpg.add_plot_axis(dpg.mvYAxis, tag="plot_y")

    # ------------------------------------------------------------ transport

    def toggle_play(self):
        self.playing = not self.playing
        dpg.set_item_label("play_button", "pause" if self.playing else "play")

    def step_once(self):
        if self.player is not None:
            self.playing = True
            self.toggle_play()
            self.player.step()
            self.actions.after_step()

    def reset(self):
        if self.player is not None:
            self.player.reset()

    def seek(self, frame):
        """Scrub: the player restores a recorded state and steps forward (never backwards)."""
        if self.player is not None:
            if self.playing:
                self.toggle_play()
            self.player.seek(int(frame))

    def _speed(self, text):
        self.speed = float(text.rstrip("x"))

    def advance(self, seconds):
        """Step the player by the real time passed times the playback speed, in whole frames."""
        if self.player is None or not self.playing:
            self.owed = 0.0
            return
        self.owed += seconds * self.speed
        steps = min(int(self.owed / self.player.dt), MAX_STEPS_PER_TICK)
        self.owed = min(self.owed - steps * self.player.dt, self.player.dt)
        for _ in range(steps):
            self.play_one()

    def play_one(self):
        """One frame of play: a step, or back to frame 0 (inputs kept) once every clamped clip has ended."""
        if dpg.get_value("loop_preview") and self.player.finished:
            self.player.reset()
        else:
            self.player.step()
            self.actions.after_step()

    # ------------------------------------------------------------ inputs

    def build_inputs(self):
        """One slider or checkbox per graph input of the plan."""
        dpg.delete_item("inputs", children_only=True)
        self.input_items = {}
        player = self.player
        if player is None:
            return
        for nid, (_, kind) in player.plan.inputs.items():
            node = player.plan.nodes[nid]
            value = player.inputs.get(nid, node.default)
            low, high = _range(node, value)
            cb = (lambda s, a, u: self.player.set_input(u, a))
            if kind == "bool":
                item = dpg.add_checkbox(label=nid, default_value=bool(value), parent="inputs", user_data=nid,
                                        callback=lambda s, a, u: self.player.set_input(u, bool(a)))
            elif kind == "int":
                item = dpg.add_slider_int(label=nid, default_value=int(value or 0), min_value=int(low),
                                          max_value=int(high), parent="inputs", user_data=nid, callback=cb, width=TIMELINE - 120)
            elif kind == "scalar":
                item = dpg.add_slider_float(label=nid, default_value=float(value or 0.0), min_value=low,
                                            max_value=high, parent="inputs", user_data=nid, callback=cb, width=TIMELINE - 120)
            elif kind == "vec3":
                v = list(value) if value is not None else [0.0, 0.0, 0.0]
                item = dpg.add_slider_floatx(label=nid, default_value=v, size=3, min_value=low, max_value=high,
                                             parent="inputs", user_data=nid, width=TIMELINE - 120,
                                             callback=lambda s, a, u: self.player.set_input(u, list(a[:3])))
            else:
                item = dpg.add_text(f"{nid}: {kind} input (set from code)", parent="inputs")
            self.input_items[nid] = item
        self.actions.rebuild()

    # ------------------------------------------------------------ camera input

    def _hovered(self):
        return dpg.does_item_exist("view3d") and dpg.is_item_hovered("view3d")

    def _on_drag(self, sender, data, mode):
        if self.drag is None:
            if not self._hovered():
                return
            self.drag = (mode, 0.0, 0.0)
        if self.drag[0] != mode:
            return
        _, dx, dy = data
        ddx, ddy = dx - self.drag[1], dy - self.drag[2]
        self.drag = (mode, dx, dy)
        (self.camera.orbit if mode == "orbit" else self.camera.pan)(ddx, ddy)
        dpg.set_value("follow", dpg.get_value("follow") and mode == "orbit")

    def _on_wheel(self, sender, delta):
        if self._hovered():
            self.wheel(delta)

    def wheel(self, delta):
        """Zoom by ``delta`` wheel notches: rolled forward (> 0) moves in, 10% of the distance a notch."""
        self.camera.zoom(1.0 / 0.9 ** delta)

    # ------------------------------------------------------------ drawing

    def draw(self):
        """Redraw the 3D view, the timeline and the pop marks from the player's current frame."""
        dpg.delete_item("view3d", children_only=True)
        dpg.draw_rectangle((0, 0), (WIDTH, HEIGHT), fill=(24, 26, 30), color=(60, 60, 60), parent="view3d")
        player = self.player
        if player is None:
            return
        pos = player.pos
        if not self.framed and len(pos):
            self.camera.frame(pos)
            self.framed = True
        if dpg.get_value("follow") and len(pos):
            self.camera.target[[0, 2]] = pos[0, [0, 2]]
        self._grid(pos[0] if len(pos) else np.zeros(3))
        self._polyline(player.trail, (90, 140, 220))
        self._skeleton(pos, player.parents)
        if dpg.get_value("show_vel") and player.fd is not None and player.prev_vel is not None:
            fd_pos, fd_vel = player.fd  # frame t-1: its central difference needs frame t
            self._arrows(fd_pos, player.prev_vel, (80, 220, 120), thickness=3)
            self._arrows(fd_pos, fd_vel, (240, 150, 40), thickness=1)
            dpg.draw_text((8, HEIGHT - 20), "velocity at the previous frame: propagated (green), "
                          "central difference (orange)", size=13, parent="view3d", color=(170, 170, 170))
        dpg.draw_text((8, 6), f"frame {player.frame}   t = {player.time:.2f} s", size=14, parent="view3d",
                      color=(200, 200, 200))
        self._timeline()

    def _project(self, points):
        return self.camera.project(np.asarray(points, dtype=np.float64).reshape(-1, 3), WIDTH, HEIGHT)

    def _grid(self, centre):
        c = np.floor(centre[[0, 2]])
        ticks = np.arange(-6, 7)
        for k in ticks:
            for a, b in (((c[0] + k, 0, c[1] - 6), (c[0] + k, 0, c[1] + 6)),
                         ((c[0] - 6, 0, c[1] + k), (c[0] + 6, 0, c[1] + k))):
                self._segment(a, b, (55, 60, 66), 1)

    def _segment(self, a, b, colour, thickness):
        """A 3D segment, clipped against the near plane by subdividing (enough for a grid and bones)."""
        xy, ok = self._project([a, b])
        if ok.all():
            dpg.draw_line(tuple(xy[0]), tuple(xy[1]), color=colour, thickness=thickness, parent="view3d")
        elif ok.any():
            pts = np.linspace(a, b, 9)
            xy, ok = self._project(pts)
            for i in range(8):
                if ok[i] and ok[i + 1]:
                    dpg.draw_line(tuple(xy[i]), tuple(xy[i + 1]), color=colour, thickness=thickness, parent="view3d")

    def _polyline(self, points, colour):
        if points is None or len(points) < 2:
            return
        xy, ok = self._project(points)
        run = [tuple(p) for p, k in zip(xy, ok) if k]
        if len(run) >= 2:
            dpg.draw_polyline(run, color=colour, thickness=1, parent="view3d")

    def _skeleton(self, pos, parents):
        xy, ok = self._project(pos)
        for j, p in enumerate(parents):
            if p >= 0 and ok[j] and ok[p]:
                dpg.draw_line(tuple(xy[p]), tuple(xy[j]), color=(230, 230, 230), thickness=3, parent="view3d")
        for j in range(len(pos)):
            if ok[j]:
                dpg.draw_circle(tuple(xy[j]), 2.5, color=(255, 210, 90), fill=(255, 210, 90), parent="view3d")

    def _arrows(self, pos, vel, colour, thickness=2):
        tips = pos + ARROW_SECONDS * vel
        a, ok_a = self._project(pos)
        b, ok_b = self._project(tips)
        for j in range(len(pos)):
            if ok_a[j] and ok_b[j] and np.linalg.norm(b[j] - a[j]) > 1.0:
                dpg.draw_arrow(tuple(b[j]), tuple(a[j]), color=colour, thickness=thickness, size=4,
                               parent="view3d")

    def _timeline(self):
        player = self.player
        first, last = player.first, max(player.last, player.first + 1)  # everything recorded, either way of now
        dpg.configure_item("timeline", min_value=first, max_value=last)
        dpg.set_value("timeline", player.frame)
        dpg.delete_item("pop_marks", children_only=True)
        w = TIMELINE
        events = player.events()
        for frame in sorted({f for f, _ in events}):  # a tick per frame with events (blue), under the pops (red)
            x = 8 + (w - 16) * (frame - first) / (last - first)
            dpg.draw_line((x, 0), (x, 6), color=EVENT_TICK, thickness=1, parent="pop_marks")
        self.event_ticks = len({f for f, _ in events})
        dpg.set_value("event_list", "\n".join(
            f"{f:5d}  {e.node}.{e.name} {e.kind}" + (f" {e.detail}" if e.detail else "")
            + (f" w {e.weight:.2f}" if e.weight < 1.0 else "")
            for f, e in events[-EVENTS_LISTED:]) or "no events")
        for pop in player.pops:
            x = 8 + (w - 16) * (pop.frame - first) / (last - first)
            dpg.draw_line((x, 0), (x, 10), color=(255, 80, 60), thickness=2, parent="pop_marks")
        if player.pops:
            pop = player.pops[-1]
            where = f"node {pop.node!r}" if pop.node else "no single node"
            dpg.set_value("pop_text", f"{len(player.pops)} pop(s); last at frame {pop.frame} ({pop.time:.2f} s): "
                                      f"{where}, joints {', '.join(pop.joints[:4])}, "
                                      f"{pop.error * 1000:.1f} mm off its velocities")
        else:
            dpg.set_value("pop_text", "no pops")

    # ------------------------------------------------------------ plots

    def refresh_channels(self):
        """Fill the channel combos from the player (a root speed and the first input chosen by default)."""
        names = self.player.channels() if self.player is not None else []
        defaults = [n for n in names if n.startswith("speed:")][:1] + [n for n in names if n.startswith("input:")][:1]
        for k in range(3):
            tag = f"channel_{k}"
            current = dpg.get_value(tag)
            dpg.configure_item(tag, items=["(none)"] + names)
            if current not in names:
                dpg.set_value(tag, defaults[k] if k < len(defaults) else "(none)")
        self.update_plot(True)

    def update_plot(self, now=False):
        self._plot_tick += 1
        if self.player is None or not (now or self._plot_tick % 10 == 0):
            return
        for s in self.series:
            if dpg.does_item_exist(s):
                dpg.delete_item(s)
        self.series = []
        low, high, first, last = np.inf, -np.inf, self.player.frame, self.player.frame + 1
        for k in range(3):
            name = dpg.get_value(f"channel_{k}")
            if not name or name == "(none)":
                continue
            y = np.asarray(self.player.history(name), dtype=np.float64)
            if len(y) == 0:
                continue
            y = y.reshape(len(y), -1)
            x = np.arange(self.player.first, self.player.first + len(y), dtype=np.float64)
            self.series.append(dpg.add_line_series(list(x), list(y[:, 0]), label=name, parent="plot_y"))
            low, high = min(low, float(np.min(y[:, 0]))), max(high, float(np.max(y[:, 0])))
            first = min(first, int(x[0]))
        if np.isfinite(low):  # explicit limits: implot fits data only after it has drawn it once
            pad = 0.05 * (high - low) + 1e-3
            dpg.set_axis_limits("plot_x", first, max(last, first + 1))
            dpg.set_axis_limits("plot_y", low - pad, high + pad)


def _range(node, value):
    """A slider range for an input: its [min, max], else a span around its default."""
    low, high = node.min, node.max
    v = np.atleast_1d(np.asarray(value if value is not None else 0.0, dtype=np.float64))
    if low is None:
        low = float(min(v.min() - 1.0, 0.0))
    if high is None:
        high = float(max(v.max() + 1.0, 1.0))
    return float(low), float(high)
