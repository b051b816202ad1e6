"""``ag.compile(graph, batch) -> Plan``: check, plan and load the executor; ``plan.instance()`` runs it.

The layers: ``graph`` (the file) -> ``check`` -> ``plan`` (tables) -> ``instance``
(buffers and ``step``); this module only puts them together behind the public names.
"""

from __future__ import annotations

from pathlib import Path

from .errors import GraphError
from .events import DEFAULT_CAPACITY
from .graph import Graph
from .instance import PARALLEL_MIN_BATCH, Instance  # noqa: F401 (public names)
from .plan import make_plan


def compile(graph, batch=1, assets=None, skeleton=None, reuse_slots=True, events=DEFAULT_CAPACITY):  # noqa: A001
    """Check and plan ``graph`` (a Graph or a path) for ``batch`` characters and load the executor.

    ``assets`` maps asset names to in-memory clips (``Clip`` or ``(Skeleton, Clip)``), overriding or
    adding to the graph's; ``skeleton`` gives the skeleton of a graph without clip assets.
    ``reuse_slots=False`` makes a debug plan: every node's output stays readable (``Instance.port``).
    ``events``: how many events each character keeps between two ``Instance.events()`` calls (0: none;
    ``animgraph.events``).  Raises GraphError naming file, node and port.
    """
    if isinstance(graph, (str, Path)):
        graph = Graph.load(graph)
    if not isinstance(graph, Graph):
        raise GraphError(f"compile: graph must be a Graph or a path, got {type(graph).__name__}")
    _check_assets(assets, skeleton, graph.path)
    plan = make_plan(graph, batch, assets=assets, skeleton=skeleton, reuse_slots=reuse_slots, events=events)
    from . import executor

    plan.executor = executor.load(plan.node_types)
    return plan


def _check_assets(assets, skeleton, file):
    """GraphError naming the argument unless ``assets`` maps names to clips and ``skeleton`` is a Skeleton."""
    from .pose import Clip, Skeleton

    if skeleton is not None and not isinstance(skeleton, Skeleton):
        raise GraphError(f"compile: skeleton must be a Skeleton or None, got {type(skeleton).__name__}", file=file)
    if assets is None:
        return
    if not isinstance(assets, dict):
        raise GraphError(f"compile: assets must be a dict {{name: Clip}}, got {type(assets).__name__}", file=file)
    for name, value in assets.items():
        pair = isinstance(value, tuple) and len(value) == 2
        if not isinstance(name, str) or not (
            isinstance(value, Clip) or (pair and isinstance(value[0], Skeleton) and isinstance(value[1], Clip))
        ):
            raise GraphError(f"compile: assets[{name!r}] must be a Clip or (Skeleton, Clip), "
                             f"got {type(value).__name__}", file=file)


