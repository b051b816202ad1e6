"""Blender probe: import each glTF file, write its armatures' pose-bone heads at the animation's keys as JSON.

Usage: blender -b --factory-startup --python blender_probe.py -- OUT.json FILE.glb ...
OUT.json: {file: {armatures, bones, times (s), heads [key][bone][x, y, z] (Blender's z-up world)}}.
"""

import json
import sys

import bpy

args = sys.argv[sys.argv.index("--") + 1:]
out, files = args[0], args[1:]
result = {}
for file in files:
    bpy.ops.wm.read_factory_settings(use_empty=True)
    # FLAT: Debian's Blender 3.4 guesses smooth faces ("NORMALS", the default) with np.bool, gone in its numpy 1.24.
    bpy.ops.import_scene.gltf(filepath=file, import_shading="FLAT")
    scene = bpy.context.scene
    fps = scene.render.fps / scene.render.fps_base
    armatures = [o for o in scene.objects if o.type == "ARMATURE"]
    arm = armatures[0]
    action = arm.animation_data.action if arm.animation_data else None
    frames = sorted({round(k.co.x, 6) for fc in action.fcurves for k in fc.keyframe_points}) if action else []
    heads = []
    for f in frames:
        scene.frame_set(int(f // 1), subframe=f - f // 1)
        heads.append([list(arm.matrix_world @ b.head) for b in arm.pose.bones])
    result[file] = {"armatures": len(armatures), "bones": [b.name for b in arm.pose.bones],
                    "times": [f / fps for f in frames], "heads": heads}
with open(out, "w") as fh:
    json.dump(result, fh)
