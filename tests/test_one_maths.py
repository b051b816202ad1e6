"""One maths (issue 24): every formula of ``maths.py``/``ik.py`` exists once, and the lane tiles run those same functions.

The lane modules define no function named as one of ``maths.py``/``ik.py``, and no function body
equal to one of theirs once names are stripped (a renamed copy).  The shared functions are
generic over the float type: float32 in, float32 out (the lanes' SIMD), float64 in, float64 out.
"""

import ast
import copy
from pathlib import Path

import numpy as np
import pytest
from numba import njit, typeof, types

from animgraph import maths

ROOT = Path(maths.__file__).resolve().parent
LANE_MODULES = ("lanes.py", "lanes_ops.py", "lanes_ik.py")


def functions(path):
    """``{name: FunctionDef}`` of every function defined anywhere in the module at ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}


class _Strip(ast.NodeTransformer):
    """Every identifier (variables, arguments, attributes) replaced by ``_``, but the names of called functions: what
    is left is the formula and what it calls (a row gather through other accessors is another function)."""

    def visit_Call(self, node):
        node.args = [self.visit(a) for a in node.args]
        node.keywords = [self.visit(k) for k in node.keywords]
        return node

    def visit_Name(self, node):
        return ast.copy_location(ast.Name(id="_", ctx=node.ctx), node)

    def visit_arg(self, node):
        return ast.copy_location(ast.arg(arg="_"), node)

    def visit_Attribute(self, node):
        self.generic_visit(node)
        node.attr = "_"
        return node


def stripped_body(fn):
    """The body of ``fn`` without its docstring and with names stripped, as a comparable string."""
    body = fn.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    return ast.dump(_Strip().visit(ast.Module(body=copy.deepcopy(body), type_ignores=[])))


def reference():
    return {**functions(ROOT / "maths.py"), **functions(ROOT / "ik.py")}


def test_the_strip_finds_a_renamed_copy():
    # The check itself: a copy of maths.vcross under other names is found, a different formula is not.
    src = "def cross3(p, q):\n    'doc'\n    return (madd(p[1], q[2], -(p[2] * q[1])), madd(p[2], q[0], -(p[0] * q[2])), " \
          "madd(p[0], q[1], -(p[1] * q[0])))\n" \
          "def other(p, q):\n    return (madd(p[1], q[2], p[2] * q[1]), madd(p[2], q[0], -(p[0] * q[2])), " \
          "madd(p[0], q[1], -(p[1] * q[0])))\n"
    tree = ast.parse(src)
    copy_, other = (n for n in tree.body)
    want = stripped_body(reference()["vcross"])
    assert stripped_body(copy_) == want
    assert stripped_body(other) != want


def package_modules():
    """Every module of ``animgraph/`` and ``nodes/`` (the package's ``nodes`` directory) but maths.py and ik.py."""
    nodes = Path(__import__("animgraph.nodes", fromlist=["_"]).__file__).resolve().parent
    paths = sorted(ROOT.rglob("*.py")) + sorted(nodes.rglob("*.py"))
    return [p for p in paths if p.resolve() not in ((ROOT / "maths.py").resolve(), (ROOT / "ik.py").resolve())]


def test_every_module_is_checked():
    names = {p.name for p in package_modules()}
    assert set(LANE_MODULES) <= names and {"blend.py", "two_bone_ik.py", "executor.py"} <= names
    assert "maths.py" not in names and "ik.py" not in names


@pytest.mark.parametrize("path", package_modules(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_module_defines_a_function_of_maths_or_ik_again(path):
    ref = reference()
    bodies = {stripped_body(f): name for name, f in ref.items()}
    own = functions(path)
    same_name = sorted(set(own) & set(ref))
    same_body = sorted(f"{name} = {bodies[stripped_body(f)]}" for name, f in own.items() if stripped_body(f) in bodies)
    assert not same_name and not same_body, (same_name, same_body)


@njit
def _shared(q, v, ang, h):
    return maths.qrot(q, v), maths.ang_to_qdx(q, ang), maths.qexp_series(h), maths.kmul(
        (v, q, v, ang, ang, v), (ang, q, v, v, ang, ang))


@pytest.mark.parametrize("ft", [np.float32, np.float64])
def test_shared_maths_keeps_the_float_type(ft):
    rng = np.random.default_rng(3)
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    v, ang, h = rng.normal(size=3), rng.normal(size=3), rng.uniform(-0.9, 0.9, size=3)
    args = [tuple(ft(x) for x in a) for a in (q, v, ang, h)]
    got = _shared(*args)
    want = _shared(*[tuple(float(x) for x in a) for a in args])  # the same inputs in float64

    def leaves(t):
        return [y for x in t for y in leaves(x)] if isinstance(t, tuple) else [t]

    def leaf_types(t):
        return [y for x in t.types for y in leaf_types(x)] if isinstance(t, types.BaseTuple) else [t]

    # numba returns Python floats: the computed type is the compiled signature's.
    returned = _shared.overloads[tuple(typeof(a) for a in args)].signature.return_type
    assert set(leaf_types(returned)) == {typeof(ft(0))}
    np.testing.assert_allclose(np.array(leaves(got), np.float64), leaves(want), rtol=2e-6, atol=2e-6)


def test_series_exp_matches_the_exp_map_in_both_float_types():
    # qexp_series takes 8 terms in float32 and 12 in float64 (``maths.pick``): each within its type's rounding of
    # qexp up to |h| = pi / 2.
    for h in ((0.0, 0.0, 0.0), (1e-3, -2e-3, 0.5e-3), (0.3, -0.7, 0.2), (np.pi / 2, 0.0, 0.0), (0.9, 0.9, -0.6)):
        want = np.array(maths.qexp(h))
        np.testing.assert_allclose(maths.qexp_series(h), want, rtol=0, atol=1e-15)
        got32 = maths.qexp_series(tuple(np.float32(x) for x in h))
        np.testing.assert_allclose(np.array(got32, np.float64), want, rtol=0, atol=3e-7)
