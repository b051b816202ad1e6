"""animgraph.jit: compiled functions without numba's Python wrapper, callable from Python through a twin."""

import os
import subprocess
import sys

import numpy as np

from animgraph.jit import CompiledOnly, LinkOnlyLibrary, called_from_python, njit


@njit
def _cube_plus(x, k):
    return x * x * x + k


@njit(entry=True)
def _twice_cube_plus(x, k):
    return 2.0 * _cube_plus(x, k)


def _wraps_for_python(ir):
    """Whether LLVM IR text ``ir`` defines numba's Python wrapper (mangled ``_ZN7cpython...``)."""
    return any(line.startswith("define") and "@_ZN7cpython" in line for line in ir.splitlines())


def test_compiled_callers_link_it_without_the_python_wrapper_and_python_calls_reach_a_twin():
    assert isinstance(_cube_plus, CompiledOnly) and not isinstance(_twice_cube_plus, CompiledOnly)
    assert _twice_cube_plus(1.5, 0.25) == 2.0 * (1.5 ** 3 + 0.25)
    (sig,) = _cube_plus.signatures  # compiled as the caller's callee only
    assert not _wraps_for_python(_cube_plus.inspect_llvm(sig))
    assert _wraps_for_python(_twice_cube_plus.inspect_llvm(_twice_cube_plus.signatures[0]))  # the check sees one
    # From Python: the same function, through its twin (the bare code would crash the process).
    assert _cube_plus(1.5, 0.25) == 1.5 ** 3 + 0.25
    assert _cube_plus(np.float32(2.0), np.float32(1.0)) == np.float32(9.0)
    twin = called_from_python(_cube_plus)
    assert twin is not _cube_plus and twin is called_from_python(_cube_plus)
    assert twin.py_func.__code__ is _cube_plus.py_func.__code__
    assert _wraps_for_python(twin.inspect_llvm(twin.signatures[0]))
    assert called_from_python(_twice_cube_plus) is _twice_cube_plus


MODULE = '''
from animgraph.jit import njit

@njit(cache=True)
def inner(x):
    return x * 3.0 + 1.0

@njit(cache=True, entry=True)
def outer(x):
    return inner(x) - 1.0
'''

CALLS = {
    "compiled-first": "print(mod.outer(2.0), mod.inner(2.0))",
    "python-first": "print(mod.inner(2.0), mod.outer(2.0))",
}


def test_the_function_and_its_twin_keep_their_own_cache_entries(tmp_path):
    # numba's cache key does not include the wrapper flags: were the twin cached under the function's own name, a
    # process could load the wrapper-less code for a Python call and crash.  Fill the cache in one order, load it
    # in the other, then the reverse, each in a fresh process.
    (tmp_path / "twinmod.py").write_text(MODULE)
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(tmp_path)}
    for first, second in (("compiled-first", "python-first"), ("python-first", "compiled-first")):
        for old in (tmp_path / "cache").rglob("*"):
            if old.is_file():
                old.unlink()
        for order in (first, second):
            code = "import twinmod as mod\n" + CALLS[order]
            run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
            assert run.returncode == 0, (first, order, run.returncode, run.stderr[-2000:])
            assert sorted(map(float, run.stdout.split())) == [6.0, 7.0], (order, run.stdout)
    names = sorted(p.name.split("-")[0] for p in (tmp_path / "cache").rglob("*.nbi"))
    assert names == ["twinmod.inner", "twinmod.inner_py", "twinmod.outer"], names


@njit(own_code=True)
def _sum_squares(a):
    s = 0.0
    for x in a:
        s += x * x
    return s


@njit(entry=True)
def _norm_plus(a, k):
    return np.sqrt(_sum_squares(a)) + _cube_plus(k, 0.0)


def _defines(ir, name):
    """Whether LLVM IR text ``ir`` defines a function whose symbol contains ``name``."""
    return any(line.startswith("define") and name in line for line in ir.splitlines())


def _declares(ir, name):
    """Whether LLVM IR text ``ir`` declares, without defining, a function whose symbol contains ``name``."""
    return any(line.startswith("declare") and name in line for line in ir.splitlines())


def test_compiled_only_code_is_linked_in_and_own_code_is_called():
    a = np.arange(5.0)
    assert _norm_plus(a, 2.0) == np.sqrt(30.0) + 8.0
    caller = _norm_plus.overloads[_norm_plus.signatures[0]].library
    ir = caller.get_llvm_str()
    assert not _declares(ir, "_cube_plus")  # linked in (and here inlined)
    assert _declares(ir, "_sum_squares") and not _defines(ir, "_sum_squares")  # called
    callee = _sum_squares.overloads[_sum_squares.signatures[0]].library
    assert callee.get_pointer_to_function(_sum_squares.overloads[_sum_squares.signatures[0]].fndesc.llvm_func_name)
    linked = _cube_plus.overloads[_cube_plus.signatures[0]]
    assert isinstance(linked.library, LinkOnlyLibrary)
    assert linked.library.get_pointer_to_function(linked.fndesc.llvm_func_name) == 0  # no machine code of its own
    assert _sum_squares(a) == 30.0  # from Python: its twin


CALLED = '''
import numpy as np
from animgraph.jit import njit

@njit(cache=True)
def helper(x):
    return x + 0.5

@njit(cache=True, own_code=True)
def inner(a):
    s = 0.0
    for x in a:
        s += helper(x) * x
    return s

@njit(cache=True, entry=True)
def outer(a):
    return inner(a) * 2.0
'''


def test_a_cached_caller_loads_the_code_it_calls_in_a_fresh_process(tmp_path):
    # outer's cached machine code calls inner's, which is not in it: a fresh process that loads outer from the
    # cache must load inner first.  With inner's entry gone inner is compiled again, under another name (numba
    # numbers each compile), so outer's cached code would call nothing (a crash): outer is compiled again too,
    # and the next process loads both.
    (tmp_path / "calledmod.py").write_text(CALLED)
    cache = tmp_path / "cache"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "PYTHONPATH": str(tmp_path)}
    code = ("import numpy as np, calledmod as mod\n"
            "print(mod.outer(np.arange(4.0)), mod.outer.stats.cache_hits.get(mod.outer.signatures[0], 0))")
    want = 2.0 * sum(x * (x + 0.5) for x in range(4))
    for case, hit in (("fill", 0), ("load", 1), ("inner's entry gone", 0), ("load again", 1)):
        if case == "inner's entry gone":
            gone = [p for p in cache.rglob("*") if p.name.startswith("calledmod.inner") and p.is_file()]
            assert gone
            for p in gone:
                p.unlink()
        run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, (case, run.returncode, run.stderr[-2000:])
        value, hits = run.stdout.split()
        assert float(value) == want, (case, value)
        assert int(hits) == hit, (case, hits)  # whether outer itself came from the cache


def test_two_installs_of_the_same_sources_share_the_cache(tmp_path):
    # Two venvs, or a CI's fresh one each run, with one cache directory: the second install loads the first's
    # code (numba alone keys its cache by each file's directory, so the second would compile everything again).
    cache = tmp_path / "cache"
    code = ("import numpy as np, calledmod as mod\n"
            "print(mod.outer(np.arange(4.0)), mod.outer.stats.cache_hits.get(mod.outer.signatures[0], 0),"
            " mod.inner.stats.cache_hits.get(mod.inner.signatures[0], 0))")
    for install, hit in (("first", 0), ("second", 1)):
        (tmp_path / install).mkdir()
        (tmp_path / install / "calledmod.py").write_text(CALLED)
        env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "PYTHONPATH": str(tmp_path / install)}
        run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, (install, run.returncode, run.stderr[-2000:])
        value, outer_hits, inner_hits = run.stdout.split()
        assert float(value) == 2.0 * sum(x * (x + 0.5) for x in range(4)), (install, value)
        assert (int(outer_hits), int(inner_hits)) == (hit, hit), (install, run.stdout)
