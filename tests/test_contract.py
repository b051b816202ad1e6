"""The node contract, checked over every file in ``nodes/``: a new node is one file plus its test.

Walks the node modules and the registry: every module registers node types; every type
declares its palette category, the kinds of its non-numeric fields, and either its pure op
(reachable as ``ag.ops.<name>``) and verify case, or that it is graph plumbing; every module
has a test file; kernels have names; and no kernel reads ``par``, ``st``, ``ins``, ``outs``
or ``db`` through a literal index (fields, ports and tables are named once, in the file).
The runtime knows no node type (it calls the nodes' hooks), and each op's initial state
row, which a reset may copy, is what a fresh instance holds.
"""

import ast
import importlib
import pkgutil
import re
from pathlib import Path

import numpy as np
import pytest

import animgraph as ag
import animgraph.nodes
from animgraph import graphs, verify
from animgraph.executor import OP_STATE, OP_STATE_END
from animgraph.instance import Instance
from animgraph.jit import OwnCode, OwnCodeEntry
from animgraph.node import CATEGORIES, FIELD_KINDS, REGISTRY, Node
from animgraph.plan import make_plan

NODES_DIR = Path(animgraph.nodes.__file__).parent
TESTS_DIR = Path(__file__).parent
MODULES = sorted(m.name for m in pkgutil.iter_modules(animgraph.nodes.__path__))
LITERAL_INDEX = re.compile(r"\b(par|st|ins|outs|db)\[\s*[0-9]")


def types_of(module):
    """The node types a node module registers."""
    return [cls for cls in REGISTRY.values() if cls.__module__ == f"animgraph.nodes.{module}"]


def test_every_node_type_comes_from_a_node_file():
    assert MODULES and all(cls.__module__.startswith("animgraph.nodes.") for cls in REGISTRY.values())


@pytest.mark.parametrize("module", MODULES)
def test_each_node_file_registers_types_and_has_tests(module):
    importlib.import_module(f"animgraph.nodes.{module}")
    assert types_of(module), f"nodes/{module}.py registers no node type"
    tests = [p for p in TESTS_DIR.glob("test_*.py") if re.search(rf"(^|_){module}(_|$)", p.stem[len("test_"):])]
    if all(cls.PLUMBING for cls in types_of(module)):
        # Graph plumbing is tested through the graphs that use it (runtime, plan, format tests).
        tests += [p for p in TESTS_DIR.glob("test_*.py")
                  if all(f'"type": "{cls.model_fields["type"].default}"' in p.read_text() for cls in types_of(module))]
    assert tests, f"nodes/{module}.py has no test file (tests/test_node_{module}.py)"


@pytest.mark.parametrize("kind", sorted(REGISTRY))
def test_each_node_type_declares_what_the_editor_and_checks_need(kind):
    cls = REGISTRY[kind]
    assert cls.CATEGORY in CATEGORIES, (kind, cls.CATEGORY)
    for name, field_kind in cls.FIELD_KINDS.items():
        assert name in cls.model_fields and field_kind in FIELD_KINDS, (kind, name, field_kind)
    if cls.PLUMBING:
        assert cls.OP is None and cls.VERIFY is None, kind
        return
    assert callable(cls.OP) and getattr(ag.ops, cls.OP.__name__) is cls.OP, f"{kind}: no op in ag.ops"
    assert callable(cls.VERIFY) and verify.cases()[kind] is cls.VERIFY, f"{kind}: no verify case"


@pytest.mark.parametrize("kind", sorted(REGISTRY))
def test_kernels_have_names(kind):
    kernel = getattr(REGISTRY[kind].KERNEL, "py_func", REGISTRY[kind].KERNEL)
    assert kernel.__name__ != "run" and kernel.__name__.endswith("_node"), kernel.__name__


@pytest.mark.parametrize("kind", sorted(REGISTRY))
def test_kernels_the_walks_call_are_inlined_or_have_their_own_code(kind):
    # A kernel neither inlined into the walk nor own_code would be linked into every walk and compiled again there.
    for role in ("KERNEL", "EARLY_KERNEL", "TILE_KERNEL", "CLOSING_KERNEL"):
        kernel = getattr(REGISTRY[kind], role)
        if kernel is not None and kernel.targetoptions.get("inline") != "always":
            assert isinstance(kernel, (OwnCode, OwnCodeEntry)), f"{kind}.{role}: {kernel.py_func.__name__}"


@pytest.mark.parametrize("module", MODULES)
def test_no_literal_index_into_par_st_ins_outs_db(module):
    text = (NODES_DIR / f"{module}.py").read_text()
    found = [f"{module}.py:{n}: {line.strip()}" for n, line in enumerate(text.splitlines(), 1)
             if LITERAL_INDEX.search(line)]
    assert not found, "\n".join(found)


def test_fields_that_are_more_than_a_number_have_a_kind():
    """Every field whose schema is not a plain number or bool says what it is (joint, clip, axis, enum ...)."""
    plain = {"number", "integer", "boolean"}
    for kind, cls in REGISTRY.items():
        if cls.PLANNED:  # made by the check (a sync group): never in the palette, never edited
            continue
        schema = cls.model_json_schema()
        for name, prop in schema.get("properties", {}).items():
            if name in ("id", "type"):
                continue
            types = {prop.get("type")} | {p.get("type") for p in prop.get("anyOf", [])}
            types.discard(None)
            if types - plain - {"null"} or "enum" in prop or "const" in prop:
                assert name in cls.FIELD_KINDS, (kind, name, prop)


def test_instance_imports_no_node_module_and_names_no_node_type():
    # The runtime calls the nodes' hooks (``Node.write_input``, ``reset``, ``teleport``): it knows no node type.
    source = (Path(ag.__file__).parent / "instance.py").read_text(encoding="utf-8")
    type_names = set(REGISTRY)
    class_names = {cls.__name__ for cls in REGISTRY.values()}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            assert "nodes" not in (node.module or "").split("."), f"instance.py line {node.lineno} imports a node module"
            assert not {a.name for a in node.names} & ({"nodes"} | class_names), f"line {node.lineno}"
        elif isinstance(node, ast.Import):
            assert not any("nodes" in a.name.split(".") for a in node.names), f"line {node.lineno}"
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            assert node.value not in type_names, f"instance.py line {node.lineno} names node type {node.value!r}"
        elif isinstance(node, ast.Name):
            assert node.id not in class_names, f"instance.py line {node.lineno} names {node.id}"
        elif isinstance(node, ast.Attribute):
            assert node.attr not in class_names, f"instance.py line {node.lineno} names {node.attr}"


@pytest.mark.parametrize("name", graphs.names())
def test_the_plan_holds_each_ops_initial_state_as_a_fresh_instance_does(name):
    plan = make_plan(ag.Graph.load(graphs.path(name)), batch=3)
    inst = Instance(plan, python=True)  # no executor needed: nothing steps
    assert plan.initial_state.shape == (plan.n_state,)
    assert np.array_equal(inst.st, np.broadcast_to(plan.initial_state, inst.st.shape))
    for i, nid in enumerate(plan.order):
        s0, s1 = plan.ops[i, [OP_STATE, OP_STATE_END]]
        node = plan.nodes[nid]
        fresh = plan.node_state(node, 0.0)  # the node's own state() at time 0, asked again
        assert np.array_equal(plan.initial_state[s0:s1], fresh), nid
        # A node whose reset is more than a copy of that row says why in its file.
        later = plan.node_state(node, 0.7)
        overrides = type(node).reset is not Node.reset
        if overrides or not np.array_equal(later, fresh):
            assert type(node).RESET, f"node type {node.type!r}: its reset needs more than its initial row (RESET)"


def test_a_node_that_is_no_graph_input_refuses_write_input_with_a_type_error():
    # Only graph inputs take values from the caller; asking another node for its writer names the node.
    plan = make_plan(ag.Graph.load(graphs.path("blend")), batch=2)
    inst = Instance(plan, python=True)
    for nid in plan.order:
        node = plan.nodes[nid]
        if type(node).write_input is Node.write_input:
            with pytest.raises(TypeError, match=f"node '{nid}'.*not a graph input"):
                node.write_input(inst._ops[nid], np.arange(2))
    assert set(plan.inputs) and not set(plan.inputs) & {n for n in plan.order
                                                         if type(plan.nodes[n]).write_input is Node.write_input}



def _signal_ports(cls):
    """Names of the signal input ports of node type ``cls`` (built with its defaults where ports depend on fields; from
    its EXAMPLE where they depend on a required field, as a state machine's on its states)."""
    try:
        ports = cls.model_construct().inputs()
    except AttributeError:
        ports = cls.model_validate({"id": "x", "type": cls.model_fields["type"].default, **cls.EXAMPLE}).inputs()
    return {p.name for p in ports if p.signal != "pose"}


@pytest.mark.parametrize("kind", sorted(REGISTRY))
def test_an_unlinked_input_with_a_field_has_one_source_the_planners_constant(kind):
    # The planner feeds such a port its field as a constant signal; the kernel reads that signal, so the
    # node's named parameter layouts hold no second copy of the field (its state may hold last frame's value).
    cls = REGISTRY[kind]
    fed = _signal_ports(cls) & set(cls.model_fields)
    module = importlib.import_module(cls.__module__)
    for name, layout in vars(module).items():
        if hasattr(type(layout), "WIDTHS") and name.endswith("PAR"):
            assert not fed & set(type(layout).WIDTHS), f"{kind}: {name} holds {sorted(fed & set(type(layout).WIDTHS))}"


@pytest.mark.parametrize("name", graphs.names())
def test_every_input_with_a_field_reads_a_signal_linked_or_not(name):
    from animgraph.check import has_constant

    plan = make_plan(ag.Graph.load(graphs.path(name)), batch=1)
    inst = Instance(plan, python=True)
    fed = 0
    for nid in plan.order:
        node = plan.nodes[nid]
        for i, port in enumerate(node.inputs()):
            if has_constant(node, port):
                assert inst._ops[nid].ins[i] >= 0, (nid, port.name)
                fed += 1
    assert fed > 0
