"""Layering: no node module reaches another node module's code by any path; the bottom layer imports no node module.

Shared helpers live in modules named by what they hold (``animgraph.kernels``, ``maths``, ``views``,
``ik``, ``offsets``, ``args``, ``limits``, ``poseops``, ``preprocess`` ...), which every node may import.
Checked on the source with ``ast``, so an import inside a function counts too, and followed through
every animgraph module a node imports (``nodes/sample.py`` -> ``preprocess`` -> ``ops`` would be a path to
every node).  ``from animgraph import x`` counts as importing ``animgraph.x``; a bare ``import animgraph``
counts as the whole package, nodes included.
"""

import ast
from pathlib import Path

import pytest

import animgraph
import animgraph.nodes

NODES = Path(animgraph.nodes.__path__[0])
CORE = Path(animgraph.__path__[0])
# The bottom layer: what node modules share.  Each may import only these (and pose, errors)
# from animgraph, never a node module, the node contract or the planner.
BOTTOM = ("kernels", "maths", "ik", "offsets", "decay", "args", "limits", "lanes", "lanes_ops", "lanes_ik", "views",
          "poseops", "kform", "preprocess", "names", "jit", "travel", "branches", "fades", "spaces", "triangulate")
BOTTOM_MAY_IMPORT = set(BOTTOM) | {"pose", "errors"}


def animgraph_imports(source, package):
    """(line, absolute module name) of every import of an ``animgraph`` module in ``source``.

    ``package`` is the dotted package of the file, to resolve relative imports;
    ``from X import a, b`` yields ``X``, ``X.a`` and ``X.b`` (names may be modules), and
    ``from . import a`` just ``package.a``.
    """
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                module = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            else:
                module = node.module
            if node.module and module.count("."):
                found.append((node.lineno, module))
            found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
    return [(line, m) for line, m in found if m == "animgraph" or m.startswith("animgraph.")]


def node_modules():
    return sorted(p for p in NODES.glob("*.py") if p.name != "__init__.py")


def sibling_imports(path):
    """(line, module) of each other node module (``animgraph.nodes.X``) that node module ``path`` imports."""
    out = []
    for line, m in animgraph_imports(path.read_text(encoding="utf-8"), "animgraph.nodes"):
        parts = m.split(".")
        if parts[:2] == ["animgraph", "nodes"] and (len(parts) == 2 or parts[2] != path.stem):
            out.append((line, m))
    return out


def above_bottom(path):
    """(line, module) of each import in core module ``path`` of an animgraph module outside the bottom layer."""
    out = []
    for line, m in animgraph_imports(path.read_text(encoding="utf-8"), "animgraph"):
        parts = m.split(".")
        if len(parts) == 1:
            out.append((line, m))  # `import animgraph` imports the whole package, nodes included
        elif parts[1] == "nodes" or (parts[1] not in BOTTOM_MAY_IMPORT and (CORE / f"{parts[1]}.py").exists()):
            out.append((line, m))
    return out


def _module_path(name):
    """The source file of animgraph module ``name`` (``animgraph``, ``animgraph.x``, ``animgraph.nodes.x``), or None."""
    parts = name.split(".")
    if parts[0] != "animgraph" or len(parts) > 3 or (len(parts) == 3 and parts[1] != "nodes"):
        return None
    if len(parts) == 1:
        return CORE / "__init__.py"
    if parts[1] == "nodes":
        path = NODES / "__init__.py" if len(parts) == 2 else NODES / f"{parts[2]}.py"
    else:
        path = CORE / f"{parts[1]}.py"
        if not path.exists():
            path = CORE / parts[1] / "__init__.py"
    return path if path.exists() else None


def _imports_of(name):
    """The animgraph modules module ``name``'s source imports (names of objects resolved to their module)."""
    path = _module_path(name)
    if path is None:
        return set()
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = set()
    for _, m in animgraph_imports(path.read_text(encoding="utf-8"), package):
        # ``from animgraph.x import y``: y is a module (animgraph.x.y) or a name in animgraph.x.
        while _module_path(m) is None:
            m = m.rsplit(".", 1)[0]
        if m != name:
            out.add(m)
    return out


def reached(name):
    """{module: the import path from ``name``} of every animgraph module ``name`` reaches through imports."""
    paths, todo = {name: [name]}, [name]
    while todo:
        here = todo.pop()
        for m in sorted(_imports_of(here)):
            if m not in paths:
                paths[m] = paths[here] + [m]
                if m != "animgraph":  # the package itself: every node, flagged below, not followed
                    todo.append(m)
    return paths


def other_nodes_reached(path):
    """[' -> '.join(import path)] to every other node module (or the whole package) node module ``path`` reaches."""
    own = f"animgraph.nodes.{path.stem}"
    return [" -> ".join(via) for m, via in sorted(reached(own).items())
            if m == "animgraph" or (m.startswith("animgraph.nodes") and m != own)]


def test_every_node_module_is_checked():
    names = {p.stem for p in node_modules()}
    assert {"blend", "additive", "inertialize", "dead_blend", "tracking_spring", "two_bone_ik", "foot_lock",
            "look_at", "input", "constant", "sample"} <= names


@pytest.mark.parametrize("path", node_modules(), ids=lambda p: p.stem)
def test_node_module_imports_no_other_node_module(path):
    bad = sibling_imports(path)
    assert not bad, f"nodes/{path.name} imports node modules: " + ", ".join(f"{m} (line {n})" for n, m in bad) + \
        " — move shared helpers to a bottom-layer module (animgraph.kernels, maths, ik, offsets, args, limits)"


@pytest.mark.parametrize("path", node_modules(), ids=lambda p: p.stem)
def test_node_module_reaches_no_other_node_module_by_any_path(path):
    bad = other_nodes_reached(path)
    assert not bad, f"nodes/{path.name} reaches other node modules: " + "; ".join(bad)


def test_the_transitive_check_follows_a_path_through_core_modules(tmp_path, monkeypatch):
    # A node module importing a core module that imports ``ops`` (which imports every node) is flagged,
    # with the path; the same node importing only the bottom layer is not.
    core, nodes = tmp_path / "animgraph", tmp_path / "animgraph" / "nodes"
    nodes.mkdir(parents=True)
    (core / "__init__.py").write_text("from . import nodes\n")
    (nodes / "__init__.py").write_text("from . import a, b\n")
    (core / "ops.py").write_text("import animgraph.nodes\n")
    (core / "prep.py").write_text("def f():\n    from .ops import fk\n")
    (core / "maths.py").write_text("")
    (nodes / "a.py").write_text("from animgraph.prep import f\nfrom animgraph.maths import x\n")
    (nodes / "b.py").write_text("from animgraph.maths import x\n")
    monkeypatch.setitem(globals(), "NODES", nodes)
    monkeypatch.setitem(globals(), "CORE", core)
    bad = other_nodes_reached(nodes / "a.py")
    assert bad and any("animgraph.prep -> animgraph.ops -> animgraph.nodes" in b for b in bad), bad
    assert other_nodes_reached(nodes / "b.py") == []


@pytest.mark.parametrize("name", BOTTOM)
def test_bottom_module_imports_no_node_module(name):
    path = CORE / f"{name}.py"
    assert path.exists(), f"bottom-layer module animgraph/{name}.py is missing"
    bad = above_bottom(path)
    assert not bad, f"animgraph/{name}.py imports above the bottom layer: " + ", ".join(
        f"{m} (line {n})" for n, m in bad
    )


@pytest.mark.parametrize(
    "source, flagged",
    [
        ("from .blend import weighted_rot", True),
        ("from . import blend", True),
        ("from animgraph.nodes.inertialize import copy_pose", True),
        ("from animgraph.nodes import two_bone_ik", True),
        ("import animgraph.nodes.input", True),
        ("def f():\n    from .sample import key_table", True),
        ("from animgraph.kernels import copy_pose", False),
        ("from animgraph.maths import qmul", False),
        ("from .fake import helper", False),  # its own module
        ("from animgraph.node import slot", False),
    ],
)
def test_checker_flags_sibling_imports(tmp_path, source, flagged):
    path = tmp_path / "fake.py"
    path.write_text(source + "\n")
    assert bool(sibling_imports(path)) == flagged


@pytest.mark.parametrize(
    "source, flagged",
    [
        ("from .maths import qmul", False),
        ("from . import maths, pose", False),
        ("from animgraph.errors import GraphError", False),
        ("from .nodes.two_bone_ik import apply_two_bone", True),
        ("from . import nodes", True),
        ("from animgraph import nodes", True),
        ("from .node import slot", True),
        ("import animgraph", True),
    ],
)
def test_checker_flags_imports_above_bottom(tmp_path, source, flagged):
    path = tmp_path / "bottom.py"
    path.write_text(source + "\n")
    assert bool(above_bottom(path)) == flagged
