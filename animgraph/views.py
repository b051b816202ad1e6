"""Array views without copies or reference counts, for the executor's walks and the kernels below them.

- ``borrowed(arr)``: the same array with no reference count (null meminfo);
- ``alive(arr)``: a use of ``arr`` that keeps it from being freed before that point;
- ``rows(flat, at, shape)``: a C-contiguous view of part of a flat buffer;
- ``flat(arr)``: a C-contiguous array as one flat borrowed view, for loops LLVM packs across rows;
- ``overlap(x, y)``: whether two arrays share memory.

``borrowed`` and ``rows`` are plain Python functions (``walk_in_python`` runs them as they
read) with numba overloads for compiled code; ``alive`` is a small compiled function.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types

from animgraph.jit import njit
from numba.core import cgutils
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic, overload
from numba.np.arrayobj import populate_array


def borrowed(arr):
    """``arr`` as a borrowed view: the same data, shape and strides, no reference count (null meminfo).

    Every array a numba function takes is reference-counted on entry and exit, an atomic
    add each: measured, a third of a one-character step (``chain65/1``) went there.  The
    walk's arrays live as long as the call (the Python caller holds them), so the entry
    points borrow them once and every view and call below skips the count.  A kernel's own
    scratch array is counted unless it is borrowed too, with ``alive`` after its last use.
    In Python: ``arr`` itself.
    """
    return arr


@intrinsic
def _borrowed(typingctx, arr):
    if not isinstance(arr, types.Array):
        return None

    def codegen(context, builder, sig, args):
        null = ir.Constant(context.get_value_type(arr).elements[0], None)
        view = builder.insert_value(args[0], null, 0)  # meminfo
        return builder.insert_value(view, ir.Constant(context.get_value_type(arr).elements[1], None), 1)  # parent

    return arr(arr), codegen


@overload(borrowed)
def _borrowed_overload(arr):
    return lambda arr: _borrowed(arr)


def rows(flat, at, shape):
    """C-contiguous view of ``flat[at:at + prod(shape)]`` with ``shape``; the caller keeps it within ``flat``.

    ``reshape`` calls a C helper to check contiguity, about 20 ns each: the walk's database
    views cost 0.3 us per step that way.  Compiled, the view is built directly (the slice is
    contiguous by construction); in Python it is that slice reshaped.
    """
    n = 1
    for d in shape:
        n *= int(d)
    return flat[at:at + n].reshape(shape)


@intrinsic
def _rows(typingctx, flat, at, shape):
    if not (isinstance(flat, types.Array) and flat.ndim == 1 and flat.layout == "C"
            and isinstance(at, types.Integer) and isinstance(shape, types.UniTuple)):
        return None
    view = types.Array(flat.dtype, len(shape), "C")

    def codegen(context, builder, sig, args):
        src = context.make_array(flat)(context, builder, value=args[0])
        dims = [context.cast(builder, d, shape.dtype, types.intp) for d in cgutils.unpack_tuple(builder, args[2])]
        strides = [src.itemsize]
        for d in reversed(dims[1:]):
            strides.insert(0, builder.mul(strides[0], d))
        out = context.make_array(view)(context, builder)
        start = context.cast(builder, args[1], at, types.intp)
        populate_array(out, data=builder.gep(src.data, [start]), shape=dims, strides=strides,
                       itemsize=src.itemsize, meminfo=src.meminfo, parent=None)
        return impl_ret_borrowed(context, builder, view, out._getvalue())

    return view(flat, at, shape), codegen


@overload(rows)
def _rows_overload(flat, at, shape):
    return lambda flat, at, shape: _rows(flat, at, shape)


def flat(arr):
    """C-contiguous ``arr`` (any shape) as a 1-D view of the same data; ValueError for other layouts.

    ``a[j, c]`` on a (J, 3) array multiplies by its runtime row length, so LLVM cannot see
    that rows sit 3 numbers apart and keeps a loop over joints scalar; ``a[3 * j + c]`` on the
    flat view packs 4 or 8 joints per instruction.  Compiled, the view is borrowed (no
    reference count): the caller's ``arr`` outlives it.  Arrays of another layout do not compile.
    """
    if not arr.flags.c_contiguous:
        raise ValueError(f"flat needs a C-contiguous array, got strides {arr.strides} for shape {arr.shape}")
    return arr.reshape(-1)


@intrinsic
def _flat(typingctx, arr):
    if not (isinstance(arr, types.Array) and arr.layout == "C"):
        return None
    view = types.Array(arr.dtype, 1, "C")

    def codegen(context, builder, sig, args):
        src = context.make_array(arr)(context, builder, value=args[0])
        size = cgutils.unpack_tuple(builder, src.shape)[0] if arr.ndim else context.get_constant(types.intp, 1)
        for d in cgutils.unpack_tuple(builder, src.shape)[1:]:
            size = builder.mul(size, d)
        out = context.make_array(view)(context, builder)
        populate_array(out, data=src.data, shape=[size], strides=[src.itemsize], itemsize=src.itemsize,
                       meminfo=None, parent=None)
        return out._getvalue()

    return view(arr), codegen


@overload(flat)
def _flat_overload(arr):
    return lambda arr: _flat(arr)


@intrinsic
def _address(typingctx, arr):
    if not isinstance(arr, types.Array):
        return None

    def codegen(context, builder, sig, args):
        data = context.make_array(arr)(context, builder, value=args[0]).data
        return builder.ptrtoint(data, context.get_value_type(types.intp))

    return types.intp(arr), codegen


@njit(inline="always")
def overlap(x, y):
    """Whether arrays ``x`` and ``y`` share any memory (from their data addresses and sizes; no reference counts)."""
    lo, at = _address(x), _address(y)
    return at < lo + x.nbytes and lo < at + y.nbytes


@njit(cache=True, inline="never")
def alive(arr):
    """``arr.size``; a call that reads ``arr`` (any array) keeps it alive to here.

    A scratch array's ``borrowed`` view holds no reference, so the array itself must
    outlive the view's last use: a kernel calls ``alive(scratch)`` after it.
    """
    return arr.size
