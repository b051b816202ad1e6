"""Canonical joint names for the CMU skeleton, so both naming conventions read the same.

The cgspeed CMU conversions come with two joint-name sets for one 31-joint
topology.  Each joint has one snake_case canonical name:

| canonical          | MotionBuilder-style (12_01, 16_xx) | 3dsMax-style (131_xx) |
|--------------------|------------------------------------|-----------------------|
| hips               | Hips                               | Hips                  |
| left_pelvis        | LHipJoint                          | LHipJoint             |
| left_hip           | LeftUpLeg                          | LeftHip               |
| left_knee          | LeftLeg                            | LeftKnee              |
| left_foot          | LeftFoot                           | LeftAnkle             |
| left_toe           | LeftToeBase                        | LeftToe               |
| right_pelvis       | RHipJoint                          | RHipJoint             |
| right_hip          | RightUpLeg                         | RightHip              |
| right_knee         | RightLeg                           | RightKnee             |
| right_foot         | RightFoot                          | RightAnkle            |
| right_toe          | RightToeBase                       | RightToe              |
| lower_back         | LowerBack                          | lowerback             |
| spine              | Spine                              | Chest                 |
| chest              | Spine1                             | Chest2                |
| neck               | Neck                               | lowerneck             |
| upper_neck         | Neck1                              | Neck                  |
| head               | Head                               | Head                  |
| left_collar        | LeftShoulder                       | LeftCollar            |
| left_shoulder      | LeftArm                            | LeftShoulder          |
| left_elbow         | LeftForeArm                        | LeftElbow             |
| left_hand          | LeftHand                           | LeftWrist             |
| left_finger_base   | LeftFingerBase                     | lhand                 |
| left_fingers       | LeftHandIndex1                     | LFingers              |
| left_thumb         | LThumb                             | LThumb                |
| right_collar       | RightShoulder                      | RightCollar           |
| right_shoulder     | RightArm                           | RightShoulder         |
| right_elbow        | RightForeArm                       | RightElbow            |
| right_hand         | RightHand                          | RightWrist            |
| right_finger_base  | RightFingerBase                    | rhand                 |
| right_fingers      | RightHandIndex1                    | RFingers              |
| right_thumb        | RThumb                             | RThumb                |

Some file names mean different joints in the two conventions (``LeftShoulder``
is the collar bone in one and the upper arm in the other; ``Neck`` likewise),
so the map is chosen per skeleton: the convention whose names the skeleton
holds wins.  Canonical names are lower-case snake_case and never equal a file
name, so ``skeleton.index`` resolves both without ambiguity.
"""

from __future__ import annotations

# canonical -> (MotionBuilder-style, 3dsMax-style)
CMU = {
    "hips": ("Hips", "Hips"),
    "left_pelvis": ("LHipJoint", "LHipJoint"),
    "left_hip": ("LeftUpLeg", "LeftHip"),
    "left_knee": ("LeftLeg", "LeftKnee"),
    "left_foot": ("LeftFoot", "LeftAnkle"),
    "left_toe": ("LeftToeBase", "LeftToe"),
    "right_pelvis": ("RHipJoint", "RHipJoint"),
    "right_hip": ("RightUpLeg", "RightHip"),
    "right_knee": ("RightLeg", "RightKnee"),
    "right_foot": ("RightFoot", "RightAnkle"),
    "right_toe": ("RightToeBase", "RightToe"),
    "lower_back": ("LowerBack", "lowerback"),
    "spine": ("Spine", "Chest"),
    "chest": ("Spine1", "Chest2"),
    "neck": ("Neck", "lowerneck"),
    "upper_neck": ("Neck1", "Neck"),
    "head": ("Head", "Head"),
    "left_collar": ("LeftShoulder", "LeftCollar"),
    "left_shoulder": ("LeftArm", "LeftShoulder"),
    "left_elbow": ("LeftForeArm", "LeftElbow"),
    "left_hand": ("LeftHand", "LeftWrist"),
    "left_finger_base": ("LeftFingerBase", "lhand"),
    "left_fingers": ("LeftHandIndex1", "LFingers"),
    "left_thumb": ("LThumb", "LThumb"),
    "right_collar": ("RightShoulder", "RightCollar"),
    "right_shoulder": ("RightArm", "RightShoulder"),
    "right_elbow": ("RightForeArm", "RightElbow"),
    "right_hand": ("RightHand", "RightWrist"),
    "right_finger_base": ("RightFingerBase", "rhand"),
    "right_fingers": ("RightHandIndex1", "RFingers"),
    "right_thumb": ("RThumb", "RThumb"),
}

CANONICAL = tuple(CMU)
CONVENTIONS = ("motionbuilder", "3dsmax")


def _mirror_name(name):
    for a, b in (("left_", "right_"), ("right_", "left_")):
        if name.startswith(a):
            return b + name[len(a):]
    return name


# canonical -> its left/right counterpart (itself on the centre line)
MIRROR = {name: _mirror_name(name) for name in CANONICAL}


def convention(names):
    """Which CMU naming convention a list of joint names follows ('motionbuilder', '3dsmax') or None."""
    names = set(names)
    for k, conv in enumerate(CONVENTIONS):
        if all(pair[k] in names for pair in CMU.values()):
            return conv
    return None


def cmu_aliases(names):
    """{canonical name: joint index} for a CMU skeleton's joint ``names`` (either convention); {} if neither."""
    conv = convention(names)
    if conv is None:
        return {}
    k = CONVENTIONS.index(conv)
    index = {n: i for i, n in enumerate(names)}
    return {canon: index[pair[k]] for canon, pair in CMU.items()}


def install_aliases(skel):
    """Add the canonical CMU names to ``skel.aliases`` in place and return ``skel``."""
    skel.aliases.update(cmu_aliases(skel.names))
    return skel


def mirror_indices(skel):
    """Index of each joint's left/right counterpart (itself on the centre line), via canonical names.

    Joints without a canonical name pair up by a Left/Right (or L/R) prefix in
    their own name; unmatched joints map to themselves.
    """
    out = list(range(len(skel)))
    inverse = {i: canon for canon, i in skel.aliases.items() if canon in MIRROR}
    index = {n: i for i, n in enumerate(skel.names)}
    for i, name in enumerate(skel.names):
        if i in inverse:
            other = skel.aliases.get(MIRROR[inverse[i]])
            if other is not None:
                out[i] = other
            continue
        for a, b in (("Left", "Right"), ("Right", "Left"), ("left_", "right_"), ("right_", "left_"), ("L", "R"), ("R", "L")):
            if name.startswith(a) and b + name[len(a):] in index:
                out[i] = index[b + name[len(a):]]
                break
    return out
