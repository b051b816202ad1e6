"""numba's ``njit`` as animgraph compiles with it: without the C callback wrapper.

numba builds, for every function it compiles, a wrapper that lets C code (or a first-class
function value) call it; nothing in animgraph takes a kernel's address, and the wrappers
are about 5% of a cold compile's CPU (measured for the whole registry's per-character
executor: 151.6 s against 143.6 s).  Calls from Python are unaffected (they go through
the other, CPython wrapper).
"""

import numba


def njit(*args, **kwargs):
    """``numba.njit`` (as ``@njit`` or ``@njit(cache=True, ...)``) with ``no_cfunc_wrapper=True``."""
    kwargs.setdefault("no_cfunc_wrapper", True)
    return numba.njit(*args, **kwargs)
