"""numba's ``njit`` as animgraph compiles with it: without the wrappers that only calls from outside use.

numba builds, for every function it compiles, a wrapper that lets Python call it (unboxing
each argument) and one that lets C call it.  Nearly all of animgraph's compiled functions
(the maths, the node kernels and their helpers) are only ever called by other compiled code,
which calls the function itself and links its code in: the wrappers are built, optimized,
turned into machine code and cached for nothing.  They were about a fifth of a cold compile
(``animgraph run graphs/locomotion.json`` on an empty cache, one process: 31.5 s with them,
25.5 s without).

So ``njit`` builds neither.  The functions Python calls (the executor's walks, the clip
preparation) say ``entry=True`` and keep the Python wrapper.  A function without one that is
called from Python anyway (a test, a user trying ``animgraph.maths.qmul``) still works: the
first such call compiles a twin that has it (cached under a name of its own, ``<name>_py``,
since numba's cache key does not tell the two compiles apart), and Python calls go there.
"""

import types

import numba
from numba.core import config
from numba.core.registry import CPUDispatcher

TWIN_SUFFIX = "_py"  # the Python-callable twin's qualified name: ``f.__qualname__ + TWIN_SUFFIX``


class CompiledOnly(CPUDispatcher):
    """A numba dispatcher built without the Python wrapper: compiled callers link it in; a Python call goes to its
    twin (``twin()``), compiled on first use, since calling the bare code from Python would crash the process."""

    def __call__(self, *args, **kwargs):
        return self.twin()(*args, **kwargs)

    def twin(self):
        """The same function compiled with numba's Python wrapper (made once)."""
        twin = self.__dict__.get("_twin")
        if twin is None:
            f = self.py_func
            copy = types.FunctionType(f.__code__, f.__globals__, f.__name__, f.__defaults__, f.__closure__)
            copy.__kwdefaults__, copy.__module__ = f.__kwdefaults__, f.__module__
            copy.__qualname__ = f.__qualname__ + TWIN_SUFFIX
            twin = self._twin = numba.njit(**self._options)(copy)
        return twin


def called_from_python(fn):
    """The dispatcher a Python call of compiled function ``fn`` runs: its twin if ``fn`` is ``CompiledOnly``."""
    return fn.twin() if isinstance(fn, CompiledOnly) else fn


def njit(*args, entry=False, **kwargs):
    """``numba.njit`` (as ``@njit`` or ``@njit(cache=True, ...)``) without the C wrapper and, unless ``entry``
    (a function Python calls), without the Python one (``CompiledOnly``)."""
    kwargs.setdefault("no_cfunc_wrapper", True)

    def decorate(fn):
        if entry or config.DISABLE_JIT:
            return numba.njit(**kwargs)(fn)
        options = dict(kwargs)
        cache, local_types = options.pop("cache", False), dict(options.pop("locals", {}))
        options.update(nopython=True, boundscheck=options.get("boundscheck"), no_cpython_wrapper=True)
        disp = CompiledOnly(py_func=fn, locals=local_types, targetoptions=options)  # what numba.njit makes, but ours
        if cache:
            disp.enable_caching()
        disp._options = kwargs
        return disp

    if args and callable(args[0]) and len(args) == 1:
        return decorate(args[0])
    if args:
        raise TypeError("animgraph.jit.njit takes keyword options only (no signatures)")
    return decorate
