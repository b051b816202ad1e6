"""Travel's plan-time table (``animgraph.travel``) against a short breadth-first search written here, and networkx."""

from collections import deque

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from animgraph.travel import ANY, next_transitions, transition_graph, travel_path


def reference_path(n, transitions, src, dst):
    """Breadth-first from ``src``: each state's transitions tried in declaration order, the first path found kept."""
    seen, queue = {src: [src]}, deque([src])
    while queue:
        a = queue.popleft()
        for frm, to in transitions:
            if (frm == a or (frm == ANY and to != a)) and to not in seen:
                seen[to] = seen[a] + [to]
                queue.append(to)
    return seen.get(dst, [])


def test_a_hand_built_machine():
    # idle 0, walk 1, run 2, turn 3: idle->walk, walk->run, any->idle, turn->walk, run->turn
    transitions = [(0, 1), (1, 2), (ANY, 0), (3, 1), (2, 3)]
    table = next_transitions(4, transitions)
    assert travel_path(table, transitions, 0, 2) == [0, 1, 2]
    assert travel_path(table, transitions, 2, 0) == [2, 0]  # through "any"
    assert travel_path(table, transitions, 3, 2) == [3, 1, 2]
    assert travel_path(table, transitions, 0, 3) == [0, 1, 2, 3]
    assert (table.diagonal() == -1).all()


def test_ties_go_to_the_first_declared_transition():
    # 0 -> 1 -> 3 and 0 -> 2 -> 3 are both two hops: 0's first declared transition (to 2 here) wins.
    transitions = [(0, 2), (0, 1), (1, 3), (2, 3)]
    assert travel_path(next_transitions(4, transitions), transitions, 0, 3) == [0, 2, 3]
    transitions = [(0, 1), (0, 2), (1, 3), (2, 3)]
    assert travel_path(next_transitions(4, transitions), transitions, 0, 3) == [0, 1, 3]


def test_unreachable_and_bad_states():
    transitions = [(0, 1)]
    table = next_transitions(3, transitions)
    assert travel_path(table, transitions, 1, 0) == [] and table[1, 0] == -1 and table[0, 2] == -1
    with pytest.raises(ValueError, match="transition 0"):
        next_transitions(2, [(0, 5)])


machines = st.integers(1, 8).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.tuples(st.integers(-1, n - 1), st.integers(0, n - 1)), max_size=3 * n)))


@settings(max_examples=200, deadline=None)
@given(machines)
def test_random_machines_travel_as_a_breadth_first_search_by_shortest_paths(machine):
    n, transitions = machine
    table = next_transitions(n, transitions)
    graph = transition_graph(n, transitions)
    for src in range(n):
        for dst in range(n):
            path = travel_path(table, transitions, src, dst)
            assert path == reference_path(n, transitions, src, dst), (src, dst)
            if nx.has_path(graph, src, dst):
                assert len(path) - 1 == nx.shortest_path_length(graph, src, dst)
            else:
                assert path == []
