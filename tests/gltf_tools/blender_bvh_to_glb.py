"""Blender writes a glTF from a BVH file: its BVH importer, a small cube skinned to the first bone (Blender
writes a skin only for a skinned mesh), its glTF exporter.

Usage: blender -b --factory-startup --python blender_bvh_to_glb.py -- IN.bvh OUT.glb
"""

import builtins
import sys

import bpy
from io_anim_bvh import import_bvh

# Debian's Blender 3.4 BVH importer opens files with mode 'rU', refused since Python 3.11: read them as 'r'.
import_bvh.open = lambda file, mode="r", *args, **kwargs: builtins.open(file, mode.replace("U", ""), *args, **kwargs)

source, target = sys.argv[sys.argv.index("--") + 1:]
bpy.ops.wm.read_factory_settings(use_empty=True)
bpy.ops.import_anim.bvh(filepath=source, global_scale=1.0, axis_forward="-Z", axis_up="Y", update_scene_fps=True,
                        update_scene_duration=True)
arm = next(o for o in bpy.context.scene.objects if o.type == "ARMATURE")
bpy.ops.mesh.primitive_cube_add(size=0.1)
cube = bpy.context.active_object
cube.parent = arm
cube.modifiers.new("skin", "ARMATURE").object = arm
group = cube.vertex_groups.new(name=arm.data.bones[0].name)
group.add(list(range(len(cube.data.vertices))), 1.0, "REPLACE")
bpy.ops.export_scene.gltf(filepath=target, export_format="GLB")
