"""numba's ``njit`` as animgraph compiles with it: each function's code made once, where it is needed.

numba builds, for every function it compiles, a wrapper that lets Python call it (unboxing
each argument) and one that lets C call it, then optimizes the function with all its callees
linked in and turns that into machine code; a caller links the callee's code into its own
module and does the same again.  For a tree of compiled functions that is the same code
turned into machine code at every level, and a walk over every node type that links in and
compiles again the code of all of them, alone, after everything else (a first run's tail).

So ``njit`` makes three kinds of function:

- by default, a function only compiled code calls (the maths, the kernels' helpers): no
  wrappers and no machine code of its own (``LinkOnlyLibrary``): its callers link its
  optimized LLVM code in, as numba's do.  A Python call (a test, a user trying
  ``animgraph.maths.qmul``) goes to a twin compiled on first use with the Python wrapper
  (cached under a name of its own, ``<name>_py``: numba's cache key does not tell the
  compiles apart);
- ``own_code=True`` (a node's kernel, which every executor walk calls): machine code of its
  own, made once and *called* by compiled callers, never copied into them, so a walk over
  twenty node types compiles its own code only.  A caller loaded from the cache loads
  these first (``_load``, through numba's ``reload_init``);
- ``entry=True`` (the executor's walks, the clip preparation): numba's function with the
  Python wrapper, calling ``own_code`` functions the same way.

The generated machine code computes what it computed linked in: the same LLVM operations,
no fast-math, fused multiply-adds only where the source asks (``maths.madd``).
"""

import functools
import hashlib
import importlib
import os
import types

import numba
from llvmlite import binding as ll
from numba.core import caching, compiler, config
from numba.core.codegen import JITCodeLibrary
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
            twin = self._twin = numba.njit(pipeline_class=CallingCompiler, **self._options)(copy)
            if self._options.get("cache"):
                twin._cache = _CallingCache(copy)
        return twin


class CallingLibrary(JITCodeLibrary):
    """numba's library, except that code of ``own_code`` functions is called, not linked in."""

    def __init__(self, codegen, name):
        super().__init__(codegen, name)
        if not hasattr(self, "_reload_init"):  # numba < 0.62 keeps reload functions on the compile only
            self._reload_init = set()

    def add_linking_library(self, library):
        library._ensure_finalized()
        self._reload_init.update(getattr(library, "_reload_init", ()))
        loader = getattr(library, "loader", None)
        if loader is None:
            super().add_linking_library(library)
        else:
            self._reload_init.add(loader)  # a cached caller loads it before its own code


class LinkOnlyLibrary(CallingLibrary):
    """A compiled-only function's code: LLVM IR optimized with its callees' as numba optimizes it (callers
    link in the same IR as before), but never turned into machine code by itself: nothing would run it."""

    def finalize(self):
        self._raise_if_finalized()
        for library in dict.fromkeys(self._linking_libraries):
            self._final_module.link_in(library._get_module_for_linking(), preserve=True)
        self._optimize_final_module()
        self._finalize_dynamic_globals()
        self._finalized = True

    def get_pointer_to_function(self, name):
        return 0  # no machine code (a Python call goes to the twin)

    @property
    def codegen(self):
        return _NoEnvironment(self._codegen)

    def serialize_using_object_code(self):
        return self.name, "linkonly", self._get_module_for_linking().as_bitcode()

    @classmethod
    def from_cache(cls, codegen, state):
        """The library ``serialize_using_object_code`` saved."""
        name, kind, bitcode = state
        if kind != "linkonly":
            raise ValueError(f"not a link-only library: {kind!r}")
        self = cls(codegen, name)
        self.enable_object_caching()
        self._final_module = self._shared_module = ll.parse_bitcode(bitcode)
        self._finalize_dynamic_globals()
        self._finalized = True
        return self


class _NoEnvironment:
    """A link-only library's codegen: there is no environment to set (no code of its own runs)."""

    def __init__(self, codegen):
        self._codegen = codegen

    def set_env(self, env_name, env):
        pass

    def __getattr__(self, name):
        return getattr(self._codegen, name)


def _compiler(library_class):
    """numba's compiler, with libraries of ``library_class``."""

    class Compiler(compiler.Compiler):
        def compile_extra(self, func):
            self.state.library = library_class(self.state.targetctx.codegen(), func.__qualname__)
            self.state.library.enable_object_caching()
            cres = super().compile_extra(func)
            # what a cached copy runs before its code loads (numba >= 0.62 copies these itself)
            cres.reload_init.extend(fn for fn in self.state.library._reload_init if fn not in cres.reload_init)
            return cres

    Compiler.__name__ = f"{library_class.__name__}Compiler"
    return Compiler


CallingCompiler, LinkOnlyCompiler = _compiler(CallingLibrary), _compiler(LinkOnlyLibrary)


_UserProvidedCacheLocator = getattr(caching, "UserProvidedCacheLocator", None) or caching._UserProvidedCacheLocator  # < 0.61


class _SharedLocator(_UserProvidedCacheLocator):
    """numba's cache locator in its cache directory, under the module's package name instead of a hash of the
    file's directory: two installs of the same sources (two venvs; a CI's fresh one each run) share one cache.
    (animgraph's cache directory is keyed by the sources, and numba checks each file's content hash.)  Were
    the kernels keyed by install and the executor's walk not, a cached walk would load kernels compiled anew."""

    def __init__(self, py_func, py_file):
        super().__init__(py_func, py_file)
        module = py_func.__module__ or ""
        if module:
            self._cache_path = os.path.join(config.CACHE_DIR, module.rpartition(".")[0] or module)

    def get_source_stamp(self):
        st = os.stat(self._py_file)  # the content, not the time: each install's copy has its own (numba < 0.62)
        return _content_hash(self._py_file, st.st_mtime, st.st_size)


@functools.lru_cache(maxsize=None)
def _content_hash(path, mtime, size):
    """sha256 of file ``path`` (hex), read again when its time or size changes."""
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


_LOCATORS = [_SharedLocator, *caching.CompileResultCacheImpl._locator_classes]


class _CallingCacheImpl(caching.CompileResultCacheImpl):
    _locator_classes = _LOCATORS


class _LinkOnlyCacheImpl(caching.CompileResultCacheImpl):
    _locator_classes = _LOCATORS

    def rebuild(self, target_context, payload):
        libdata, fndesc, env, signature, objectmode, lifted, typeann, reload_init, referenced_envs = payload
        for fn in reload_init:
            fn()
        library = LinkOnlyLibrary.from_cache(target_context.codegen(), libdata)
        return compiler.CompileResult(
            target_context=target_context, typing_context=target_context.typing_context, library=library,
            environment=env, entry_point=target_context.get_executable(library, fndesc, env), fndesc=fndesc,
            type_annotation=typeann, signature=signature, objectmode=objectmode, lifted=lifted, typing_error=None,
            call_helper=None, metadata=None, reload_init=reload_init, referenced_envs=referenced_envs)


class StaleCall(Exception):
    """Cached code calls a symbol the function it calls no longer has (it was compiled again meanwhile)."""


class _CallingCache(caching.FunctionCache):
    """numba's cache, where an entry whose code calls ``own_code`` code under another name is not used."""

    _impl_class = _CallingCacheImpl

    def load_overload(self, sig, target_context):
        try:
            return super().load_overload(sig, target_context)
        except StaleCall:
            return None  # compiled again, calling the code this process has


class _LinkOnlyCache(_CallingCache):
    _impl_class = _LinkOnlyCacheImpl


class _Called:
    """A dispatcher whose code compiled callers call instead of linking in (``own_code``)."""

    def add_overload(self, cres):
        f, args = self.py_func, tuple(cres.signature.args)
        cres.library.loader = functools.partial(_load, f.__module__, f.__qualname__, args, cres.fndesc.llvm_func_name)
        super().add_overload(cres)


class OwnCode(_Called, CompiledOnly):
    """A compiled-only function with machine code of its own."""


class OwnCodeEntry(_Called, CPUDispatcher):
    """A function Python calls, whose machine code compiled callers call too."""


def _load(module, qualname, args, symbol):
    """Compile (or load from the cache) ``own_code`` function ``module.qualname`` for argument types ``args``, whose
    code a caller loaded from the cache calls as ``symbol``; ``StaleCall`` if it has another name (numba's names
    number each compile: this one's cache entry was written by another compile than the caller saw)."""
    fn = importlib.import_module(module)
    for part in qualname.split("."):
        fn = getattr(fn, part)
    fn.compile(args)
    if fn.overloads[args].fndesc.llvm_func_name != symbol:
        raise StaleCall(f"{module}.{qualname}{args}")


def called_from_python(fn):
    """The dispatcher a Python call of compiled function ``fn`` runs: its twin if ``fn`` is ``CompiledOnly``."""
    return fn.twin() if isinstance(fn, CompiledOnly) else fn


def njit(*args, entry=False, own_code=False, **kwargs):
    """``numba.njit`` (as ``@njit`` or ``@njit(cache=True, ...)``) without the C wrapper; unless ``entry`` (a
    function Python calls) without the Python one, and unless ``own_code`` without machine code of its own."""
    kwargs.setdefault("no_cfunc_wrapper", True)

    def decorate(fn):
        if config.DISABLE_JIT:
            return numba.njit(**kwargs)(fn)
        options = dict(kwargs)
        cache, local_types = options.pop("cache", False), dict(options.pop("locals", {}))
        options.update(nopython=True, boundscheck=options.get("boundscheck"))
        if not entry:
            options["no_cpython_wrapper"] = True
        kind = ((CompiledOnly, OwnCode), (CPUDispatcher, OwnCodeEntry))[entry][own_code]
        pipeline = LinkOnlyCompiler if kind is CompiledOnly else CallingCompiler
        disp = kind(py_func=fn, locals=local_types, targetoptions=options, pipeline_class=pipeline)
        if cache:
            disp._cache = _LinkOnlyCache(fn) if kind is CompiledOnly else _CallingCache(fn)
        disp._options = dict(kwargs)
        return disp

    if args and callable(args[0]) and len(args) == 1:
        return decorate(args[0])
    if args:
        raise TypeError("animgraph.jit.njit takes keyword options only (no signatures)")
    return decorate
