"""torch's composite functions: ops that torch itself writes as other ops
(CompositeImplicitAutograd), so that their graph, their derivatives (any order), forward-mode
AD and vmap are those of the ops they are made of, as in torch. Each follows ATen's
algorithm and raises its errors; ``install`` makes the Tensor methods torch has.

``einsum`` is ATen's: operands aligned to one label order, contracted left to right, each
pair one ``bmm`` (``sumproduct_pair``).
"""

from __future__ import annotations

import builtins
import warnings
from typing import Sequence

from rgrad import _C
from rgrad._C import Tensor
from rgrad._tensor import _scalar_type_name

__all__ = [
    "broadcast_to", "movedim", "moveaxis", "swapaxes", "swapdims", "ravel", "unflatten", "tile",
    "atleast_1d", "atleast_2d", "atleast_3d", "hstack", "vstack", "row_stack", "dstack", "column_stack",
    "tensor_split", "hsplit", "vsplit", "dsplit", "tensordot", "inner", "kron", "diff", "meshgrid",
    "cartesian_prod", "einsum", "clamp_min", "clamp_max", "clamp_min_", "clamp_max_",
    "nanmean", "count_nonzero", "vdot", "addmv", "addmv_",
    "baddbmm", "addbmm", "logit", "logit_", "var_mean", "std_mean", "cosine_similarity", "broadcast_tensors",
    "float_power", "signbit", "cross", "aminmax", "dist",
]


def _wrap_dim(dim: int, ndim: int) -> int:
    """A dim in [-ndim, ndim) (a 0-d tensor counts as 1-d), or torch's IndexError."""
    n = builtins.max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim % n


_MAX_PARTS = 1 << 32


def _int64(v: int) -> int:
    """``v``, or torch's error for an integer argument outside int64."""
    if not -(1 << 63) <= v < (1 << 63):
        raise ValueError("Overflow when unpacking long long")
    return v


def _dims_list(dims) -> list[int]:
    if isinstance(dims, int):
        return [dims]
    return [int(d) for d in dims]


def _cat(tensors, dim):
    from rgrad import cat

    return cat(list(tensors), dim)


# ---- views and reshapes -------------------------------------------------------------


def broadcast_to(input: Tensor, size: Sequence[int]) -> Tensor:
    """Broadcasts ``input`` to the shape ``size`` (``input.expand(size)``)."""
    return input.expand(size if isinstance(size, int) else tuple(size))


def movedim(input: Tensor, source, destination) -> Tensor:
    """Moves the dims of ``input`` at ``source`` to the positions ``destination``; the other
    dims keep their order."""
    ndim = input.dim()
    if type(source) is int and type(destination) is int and ndim > 1 and -ndim <= source < ndim and -ndim <= destination < ndim:
        # One dim moved, in range: the common call, without the general path's lists.
        order = list(range(ndim))
        del order[source % ndim]
        order.insert(destination % ndim, source % ndim)
        return input.permute(order)
    src = _dims_list(source)
    dst = _dims_list(destination)
    if len(src) != len(dst):
        raise RuntimeError(
            "movedim: Invalid source or destination dims: source "
            f"({src} dims) should contain the same number of dims as destination ({dst} dims)"
        )
    src = [_wrap_dim(d, ndim) for d in src]
    dst = [_wrap_dim(d, ndim) for d in dst]
    if len(set(src)) != len(src):
        raise RuntimeError(f"movedim: repeated dim in `source` ({_dims_list(source)})")
    if len(set(dst)) != len(dst):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({_dims_list(destination)})")
    if ndim <= 1:
        return input.view(input.shape)
    order = [-1] * ndim
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in range(ndim) if d not in src)
    order = [o if o != -1 else next(rest) for o in order]
    return input.permute(tuple(order))


moveaxis = movedim


def swapaxes(input: Tensor, axis0: int, axis1: int) -> Tensor:
    """``input.transpose(axis0, axis1)``."""
    return input.transpose(axis0, axis1)


swapdims = swapaxes


def ravel(input: Tensor) -> Tensor:
    """The elements of ``input`` as a 1-D tensor: a view when ``input`` is contiguous, else a
    copy."""
    return input.contiguous().view(-1)


def unflatten(input: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
    """Expands dim ``dim`` of ``input`` into the dims ``sizes`` (one of them may be -1)."""
    shape = input.shape
    ndim = len(shape)
    if type(dim) is int and -ndim <= dim < ndim and type(sizes) in (tuple, list) and len(sizes) == 2:
        # Two known sizes that multiply up: the common call, checked without the general
        # path's lists.
        s0, s1 = sizes
        d = dim % ndim
        if type(s0) is int and type(s1) is int and s0 >= 0 and s1 >= 0 and s0 * s1 == shape[d]:
            out = list(shape)
            out[d : d + 1] = s0, s1
            return input.view(*out)
    sizes = [int(s) for s in sizes]
    if len(sizes) == 0:
        raise RuntimeError("unflatten: sizes must be non-empty")
    ndim = input.dim()
    d = _wrap_dim(dim, ndim)
    shape = list(input.shape)
    if ndim == 0:
        raise RuntimeError("unflatten: Cannot unflatten a 0-d tensor")
    inferred = [i for i, s in enumerate(sizes) if s == -1]
    if len(inferred) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for s in sizes:
        if s != -1:
            known *= s
    if inferred:
        if known == 0 or shape[d] % known != 0:
            raise RuntimeError(
                f"shape '[{', '.join(str(s) for s in sizes)}]' is invalid for input of size {shape[d]}"
            )
        sizes[inferred[0]] = shape[d] // known
    elif known != shape[d]:
        raise RuntimeError(
            f"unflatten: Provided sizes [{', '.join(str(s) for s in sizes)}] don't multiply up to the "
            f"size of dim {dim} ({shape[d]}) in the input tensor"
        )
    return input.view(tuple(shape[:d] + sizes + shape[d + 1:]))


def tile(input: Tensor, dims: Sequence[int]) -> Tensor:
    """Repeats ``input`` ``dims[i]`` times along each dim (``dims`` shorter than the tensor's
    dims is padded with ones in front)."""
    dims = _dims_list(dims)
    pad = input.dim() - len(dims)
    if pad > 0:
        dims = [1] * pad + dims
    return input.repeat(tuple(dims))


def _atleast(tensors, fn):
    if len(tensors) == 1:
        (t,) = tensors
        if isinstance(t, (list, tuple)):
            return tuple(fn(x) for x in t)
        return fn(t)
    return tuple(fn(x) for x in tensors)


def _at1(t: Tensor) -> Tensor:
    return t.reshape(1) if t.dim() == 0 else t


def _at2(t: Tensor) -> Tensor:
    if t.dim() == 0:
        return t.reshape(1, 1)
    if t.dim() == 1:
        return t.unsqueeze(0)
    return t


def _at3(t: Tensor) -> Tensor:
    if t.dim() == 0:
        return t.reshape(1, 1, 1)
    if t.dim() == 1:
        return t.unsqueeze(0).unsqueeze(-1)
    if t.dim() == 2:
        return t.unsqueeze(-1)
    return t


def atleast_1d(*tensors):
    """Each input with at least one dim (a 0-d tensor becomes shape [1]); one tensor in, one
    out, else a tuple."""
    return _atleast(tensors, _at1)


def atleast_2d(*tensors):
    """Each input with at least two dims (new dims in front)."""
    return _atleast(tensors, _at2)


def atleast_3d(*tensors):
    """Each input with at least three dims (a 1-D tensor [n] becomes [1, n, 1], a 2-D one
    [m, n] becomes [m, n, 1])."""
    return _atleast(tensors, _at3)


def _check_sequence(tensors, name):
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{name}(): argument 'tensors' (position 1) must be tuple of Tensors, not {type(tensors).__name__}")
    if len(tensors) == 0:
        raise RuntimeError(f"{name} expects a non-empty TensorList")


def hstack(tensors) -> Tensor:
    """Stacks tensors horizontally: along dim 1, or dim 0 for 1-D tensors."""
    _check_sequence(tensors, "hstack")
    ts = [_at1(t) for t in tensors]
    return _cat(ts, 0 if ts[0].dim() == 1 else 1)


def vstack(tensors) -> Tensor:
    """Stacks tensors vertically (row-wise), after ``atleast_2d``."""
    _check_sequence(tensors, "vstack")
    return _cat([_at2(t) for t in tensors], 0)


row_stack = vstack


def dstack(tensors) -> Tensor:
    """Stacks tensors depth-wise (along dim 2), after ``atleast_3d``."""
    _check_sequence(tensors, "dstack")
    return _cat([_at3(t) for t in tensors], 2)


def column_stack(tensors) -> Tensor:
    """Stacks tensors as the columns of a 2-D tensor (0-D and 1-D tensors become columns)."""
    _check_sequence(tensors, "column_stack")
    return _cat([t.reshape(t.numel(), 1) if t.dim() <= 1 else t for t in tensors], 1)


# ---- splits ----------------------------------------------------------------------------


def _slice_dim(input: Tensor, dim: int, start: int, end: int) -> Tensor:
    return input[(slice(None),) * dim + (slice(start, end),)]


def tensor_split(input: Tensor, indices_or_sections, dim: int = 0):
    """Splits ``input`` along ``dim`` into views: ``sections`` near-equal parts (the first
    ``size % sections`` one longer), or at the given indices."""
    if input.dim() == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
    d = _wrap_dim(dim, input.dim())
    n = input.shape[d]
    if isinstance(indices_or_sections, Tensor):
        t = indices_or_sections
        if t.is_floating_point() or t.dtype == _C.bool:
            raise RuntimeError(
                f"tensor_split expected tensor_indices_or_sections to have dtype of long, but got {_scalar_type_name(t.dtype)}"
            )
        if t.dim() > 1:
            raise RuntimeError(
                "tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                f"one-dimensional tensor, but got a tensor with {t.dim()} dims"
            )
        indices_or_sections = t.item() if t.dim() == 0 else [int(v) for v in t.tolist()]
    if isinstance(indices_or_sections, int):
        sections = _int64(indices_or_sections)
        if sections <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {sections}")
        if sections > _MAX_PARTS:
            # (torch's vector of that many tensors fails to allocate: std::bad_alloc)
            raise RuntimeError(f"tensor_split: {sections} sections would be {sections} tensors, more than can be made")
        base, extra = divmod(n, sections)
        out, start = [], 0
        for i in range(sections):
            size = base + 1 if i < extra else base
            out.append(input.narrow(d, start, size))
            start += size
        return tuple(out)
    indices = [_int64(int(i)) for i in indices_or_sections]
    out, start = [], 0
    for idx in indices + [n]:
        out.append(_slice_dim(input, d, start, idx))
        start = idx
    return tuple(out)


def _split_at(input: Tensor, indices_or_sections, dim: int, name: str, need: int):
    if input.dim() < need:
        raise RuntimeError(
            f"torch.{name} requires a tensor with at least {need} dimension, but got a tensor with "
            f"{input.dim()} dimensions!"
        )
    if isinstance(indices_or_sections, int):
        size = input.shape[dim]
        if indices_or_sections == 0 or size % indices_or_sections != 0:
            raise RuntimeError(
                f"torch.{name} attempted to split along dimension {dim}, but the size of the dimension "
                f"{size} is not divisible by the split_size {indices_or_sections}!"
            )
    return tensor_split(input, indices_or_sections, dim)


def hsplit(input: Tensor, indices_or_sections):
    """``tensor_split`` along dim 1 (dim 0 for a 1-D tensor); sections must divide the dim."""
    return _split_at(input, indices_or_sections, 0 if input.dim() == 1 else 1, "hsplit", 1)


def vsplit(input: Tensor, indices_or_sections):
    """``tensor_split`` along dim 0 of a tensor of at least two dims."""
    return _split_at(input, indices_or_sections, 0, "vsplit", 2)


def dsplit(input: Tensor, indices_or_sections):
    """``tensor_split`` along dim 2 of a tensor of at least three dims."""
    return _split_at(input, indices_or_sections, 2, "dsplit", 3)


# ---- products ----------------------------------------------------------------------------


def tensordot(a: Tensor, b: Tensor, dims=2, out=None) -> Tensor:
    """Contracts dims of ``a`` with dims of ``b``: ``dims`` an int (the last ``dims`` of ``a``
    with the first of ``b``) or two lists of dims."""
    if out is not None:
        raise TypeError("tensordot(): the out= argument is not supported by rgrad")
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > a.dim() or dims > b.dim():
            raise RuntimeError(
                f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}"
            )
        da = list(range(-dims, 0))
        db = list(range(dims))
    else:
        if len(dims) != 2:
            raise RuntimeError("tensordot expects dims to be a pair of lists of dims")
        da, db = _dims_list(dims[0]), _dims_list(dims[1])
    if len(da) != len(db):
        raise RuntimeError("both dimension lists should have same length")
    k = 1
    for x, y in zip(da, db):
        sa, sb = a.shape[_wrap_dim(x, a.dim())], b.shape[_wrap_dim(y, b.dim())]
        if sa != sb:
            raise RuntimeError(
                f"contracted dimensions need to match, but first has size {sa} in dim {x} and second "
                f"has size {sb} in dim {y}"
            )
        k *= sa
    da = [_wrap_dim(d, a.dim()) for d in da]
    db = [_wrap_dim(d, b.dim()) for d in db]
    fa = [d for d in range(a.dim()) if d not in da]
    fb = [d for d in range(b.dim()) if d not in db]
    size_a = [a.shape[d] for d in fa]
    size_b = [b.shape[d] for d in fb]
    pa = 1
    for s in size_a:
        pa *= s
    pb = 1
    for s in size_b:
        pb *= s
    left = a.permute(tuple(fa + da)).reshape(pa, k)
    right = b.permute(tuple(db + fb)).reshape(k, pb)
    return left.mm(right).view(tuple(size_a + size_b))


def inner(input: Tensor, other: Tensor) -> Tensor:
    """The inner product over the last dims (a product when either is 0-D)."""
    if input.dim() == 0 or other.dim() == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(
            f"inner() the last dimension must match on both input tensors but got shapes "
            f"{list(input.shape)} and {list(other.shape)}"
        )
    return tensordot(input, other, ([-1], [-1]))


def kron(input: Tensor, other: Tensor) -> Tensor:
    """The Kronecker product: every product of an element of ``input`` and one of ``other``,
    in blocks."""
    nd = builtins.max(input.dim(), other.dim())
    a = input.reshape(tuple([1] * (nd - input.dim()) + list(input.shape)))
    b = other.reshape(tuple([1] * (nd - other.dim()) + list(other.shape)))
    sa, sb = list(a.shape), list(b.shape)
    ia, ib = [], []
    for x, y in zip(sa, sb):
        ia += [x, 1]
        ib += [1, y]
    return (a.reshape(tuple(ia)) * b.reshape(tuple(ib))).reshape(tuple(x * y for x, y in zip(sa, sb)))


def diff(input: Tensor, n: int = 1, dim: int = -1, prepend=None, append=None) -> Tensor:
    """The n-th forward difference along ``dim`` (``prepend``/``append`` joined first)."""
    if input.dim() == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = _wrap_dim(dim, input.dim())
    x = input
    if prepend is not None or append is not None:
        ts = []
        if prepend is not None:
            ts.append(prepend if prepend.dim() != 0 else prepend.expand(tuple(_with_dim(input.shape, d, 1))))
        ts.append(input)
        if append is not None:
            ts.append(append if append.dim() != 0 else append.expand(tuple(_with_dim(input.shape, d, 1))))
        x = _cat(ts, d)
    for _ in range(n):
        size = x.shape[d]
        if size == 0:
            break
        hi = _slice_dim(x, d, 1, size)
        lo = _slice_dim(x, d, 0, size - 1)
        x = hi.ne(lo) if x.dtype == _C.bool else hi - lo
    return x


def _with_dim(shape, d, size):
    s = list(shape)
    s[d] = size
    return s


def meshgrid(*tensors, indexing: str | None = None):
    """Coordinate grids: for tensors of sizes n0, n1, ..., each input expanded over the grid
    of shape [n0, n1, ...] (``indexing="ij"``; ``"xy"`` swaps the first two dims)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        warnings.warn(
            "torch.meshgrid: in an upcoming release, it will be required to pass the indexing argument.",
            UserWarning,
            stacklevel=2,
        )
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}')
    if len(tensors) == 0:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for t in tensors:
        if t.dim() > 1:
            raise RuntimeError(
                "torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: " + repr(t)
            )
    for t in tensors[1:]:
        if t.dtype != tensors[0].dtype:
            raise RuntimeError("torch.meshgrid: Expected all tensors in the tensor list to have the same dtype.")
    ts = list(tensors)
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = [t.numel() for t in ts]
    out = []
    for i, t in enumerate(ts):
        view = [1] * len(ts)
        view[i] = -1
        out.append(t.reshape(tuple(view)).expand(tuple(shape)))
    if swap:
        out[0], out[1] = out[1], out[0]
    return tuple(out)


def cartesian_prod(*tensors) -> Tensor:
    """The cartesian product of 1-D tensors: one row per combination, in order."""
    from rgrad import stack

    for t in tensors:
        if t.dim() != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.flatten() for g in grids], 1)


# ---- einsum ------------------------------------------------------------------------------


def _sumproduct_pair(left: Tensor, right: Tensor, sum_dims: list[int]) -> Tensor:
    """ATen's ``sumproduct_pair``: ``(left * right).sum(sum_dims, keepdim=True)`` of two
    tensors of one rank (sizes equal or 1) as one bmm; ``sum_dims`` are dims where both
    have the same size."""
    if not sum_dims:
        return left * right
    dim = left.dim()
    lro, lo, ro = [], [], []
    lro_size = lo_size = ro_size = sum_size = 1
    for i in range(dim):
        sl = left.shape[i] != 1
        sr = right.shape[i] != 1
        if i in sum_dims:
            if sl and sr:
                if left.shape[i] != right.shape[i]:
                    raise RuntimeError("non-broadcastable dimensions")
                sum_size *= left.shape[i]
            elif sl:
                left = left.sum(i, keepdim=True)
            elif sr:
                right = right.sum(i, keepdim=True)
        elif sl and sr:
            if left.shape[i] != right.shape[i]:
                raise RuntimeError("non-broadcastable dimensions")
            lro.append(i)
            lro_size *= left.shape[i]
        elif sl:
            lo.append(i)
            lo_size *= left.shape[i]
        else:
            ro.append(i)
            ro_size *= right.shape[i]
    out_size = ([left.shape[d] for d in lro] + [left.shape[d] for d in lo] + [1] * len(sum_dims)
                + [right.shape[d] for d in ro])
    operm = [0] * dim
    for i, d in enumerate(lro + lo + sum_dims + ro):
        operm[d] = i
    lt = left.permute(tuple(lro + lo + sum_dims + ro)).reshape(lro_size, lo_size, sum_size)
    rt = right.permute(tuple(lro + sum_dims + ro + lo)).reshape(lro_size, sum_size, ro_size)
    return lt.bmm(rt).view(tuple(out_size)).permute(tuple(operm))


_ELLIPSIS = 52  # a label index past the 52 letters


def _label_index(c: str) -> int:
    """A letter's index: A-Z are 0-25, a-z 26-51 (ATen's order)."""
    return ord(c) - ord("A") if c.isupper() else ord(c) - ord("a") + 26


def _label_letter(i: int) -> str:
    return chr(ord("A") + i) if i < 26 else chr(ord("a") + i - 26)


def _sublist_equation(args) -> tuple[str, list]:
    """``einsum(op0, sublist0, op1, sublist1, ..., [sublist_out])`` as an equation string."""
    ops, subs = list(args[0::2]), list(args[1::2])
    out = None
    if len(ops) > len(subs):  # an odd count: the last item is the output sublist
        out = ops.pop()

    def letters(sub):
        text = ""
        for s in sub:
            if s is Ellipsis:
                text += "..."
            elif isinstance(s, int) and 0 <= s < 52:
                text += _label_letter(s)
            else:
                raise ValueError("einsum(): subscript in subscript list is not within the valid range [0, 52)")
        return text

    eq = ",".join(letters(sub) for sub in subs)
    if out is not None:
        eq += "->" + letters(out)
    return eq, ops


def einsum(*args) -> Tensor:
    """Sums the product of the operands' elements over the dims the equation names
    (``"ij,jk->ik"`` is a matrix product), in Einstein's notation: an equation string and the
    operands (or a list of them), or operands each followed by its list of subscripts. ATen's
    algorithm: operands aligned to the output's dims then the contracted ones (diagonals for
    repeated subscripts), contracted left to right, each pair one bmm."""
    if len(args) < 2:
        raise ValueError(
            "einsum(): must specify the equation string and at least one operand, or at least one "
            "operand and its subscripts list"
        )
    if isinstance(args[0], str):
        equation = args[0]
        operands = list(args[1]) if len(args) == 2 and isinstance(args[1], (list, tuple)) else list(args[1:])
    else:
        equation, operands = _sublist_equation(args)
    num_ops = len(operands)
    if num_ops == 0:
        raise RuntimeError("einsum(): must provide at least one operand")
    if num_ops == 1 and isinstance(operands[0], Tensor):
        # a permutation ("bij->bji"): the general path's result, a permute, without its
        # parse (which costs more than the op)
        lhs, arrow_, rhs = equation.replace(" ", "").partition("->")
        if (arrow_ and lhs.isascii() and lhs.isalpha() and len(set(lhs)) == len(lhs) == operands[0].dim()
                and len(rhs) == len(lhs) and set(rhs) == set(lhs)):
            return operands[0].permute([lhs.index(c) for c in rhs])
    arrow = equation.find("->")
    lhs = equation if arrow < 0 else equation[:arrow]

    # the operands' labels (index 0-51, or _ELLIPSIS)
    op_labels: list[list[int]] = [[] for _ in range(num_ops)]
    ell_in_input = False
    curr = 0
    i = 0
    while i < len(lhs):
        c = lhs[i]
        if c == " ":
            pass
        elif c == ".":
            if ell_in_input:
                raise RuntimeError(f"einsum(): found '.' for operand {curr} for which an ellipsis was already found")
            if not (i + 2 < len(lhs) and lhs[i + 1] == "." and lhs[i + 2] == "."):
                raise RuntimeError(f"einsum(): found '.' for operand {curr} that is not part of any ellipsis")
            i += 2
            op_labels[curr].append(_ELLIPSIS)
            ell_in_input = True
        elif c == ",":
            curr += 1
            if curr >= num_ops:
                raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
            ell_in_input = False
        else:
            if not (c.isascii() and c.isalpha()):
                raise RuntimeError(
                    f"einsum(): invalid subscript given at index {i} in the equation string, subscripts must be in "
                    "[a-zA-Z]"
                )
            op_labels[curr].append(_label_index(c))
        i += 1
    if curr != num_ops - 1:
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")

    label_count = [0] * 52
    ell_num_dim = 0
    for k, (t, labels) in enumerate(zip(operands, op_labels)):
        ndims = t.dim()
        nlabels = len(labels)
        has_ell = _ELLIPSIS in labels
        for lab in labels:
            if lab == _ELLIPSIS:
                nlabels -= 1
            else:
                label_count[lab] += 1
        if has_ell:
            ell_num_dim = builtins.max(ell_num_dim, ndims - nlabels)
        if (nlabels > ndims) if has_ell else (nlabels != ndims):
            raise RuntimeError(
                f"einsum(): the number of subscripts in the equation ({nlabels}) "
                + ("is more than" if has_ell else "does not match")
                + f" the number of dimensions ({ndims}) for operand {k}"
                + ("" if has_ell else " and no ellipsis was given")
            )

    # each label's place in the aligned shape: the output's dims, then the contracted ones
    perm_of = [-1] * 52
    perm_index = 0
    ell_index = 0
    ell_in_output = False
    if arrow < 0:
        perm_index = ell_num_dim
        ell_in_output = True
        for lab in range(52):
            if label_count[lab] == 1:
                perm_of[lab] = perm_index
                perm_index += 1
    else:
        rhs = equation[arrow + 2:]
        i = 0
        while i < len(rhs):
            c = rhs[i]
            if c == " ":
                pass
            elif c == ".":
                if ell_in_output:
                    raise RuntimeError("einsum(): found '.' for output but an ellipsis (...) was already found")
                if not (i + 2 < len(rhs) and rhs[i + 1] == "." and rhs[i + 2] == "."):
                    raise RuntimeError("einsum(): found '.' for output that is not part of any ellipsis (...)")
                i += 2
                ell_index = perm_index
                perm_index += ell_num_dim
                ell_in_output = True
            else:
                if not (c.isascii() and c.isalpha()):
                    raise RuntimeError(
                        f"einsum(): invalid subscript given at index {len(lhs) + 2 + i} in the equation string, "
                        "subscripts must be in [a-zA-Z]"
                    )
                lab = _label_index(c)
                if label_count[lab] == 0 or perm_of[lab] != -1:
                    raise RuntimeError(
                        f"einsum(): output subscript {c}"
                        + (" appears more than once in the output" if perm_of[lab] > -1
                           else " does not appear in the equation for any input operand")
                    )
                perm_of[lab] = perm_index
                perm_index += 1
            i += 1
    out_num_dim = perm_index
    if not ell_in_output:
        ell_index = perm_index
        perm_index += ell_num_dim
    for lab in range(52):
        if label_count[lab] > 0 and perm_of[lab] == -1:
            perm_of[lab] = perm_index
            perm_index += 1

    # align each operand: sizes checked, diagonals of repeated labels, missing dims of 1
    label_size = [1] * 52
    ell_sizes = [1] * ell_num_dim
    dim_counts = [0] * perm_index
    ops: list[Tensor] = []
    for k, (operand, labels) in enumerate(zip(operands, op_labels)):
        op = operand
        permutation = [-1] * perm_index
        dim = 0
        for lab in labels:
            if lab == _ELLIPSIS:
                ndim = operand.dim() - (len(labels) - 1)
                for j in range(ell_num_dim - ndim, ell_num_dim):
                    size = op.shape[dim]
                    if size != 1:
                        if ell_sizes[j] != 1 and ell_sizes[j] != size:
                            raise RuntimeError(
                                f"einsum(): dimension {dim} covered by ellipsis in operand {k}has size {size} which "
                                f"does not broadcast with previously seen ellipsis with size {ell_sizes[j]} for the "
                                "respective dimension"
                            )
                        ell_sizes[j] = size
                        dim_counts[ell_index + j] += 1
                    permutation[ell_index + j] = dim
                    dim += 1
            elif permutation[perm_of[lab]] == -1:
                size = op.shape[dim]
                if size != 1:
                    if label_size[lab] != 1 and label_size[lab] != size:
                        raise RuntimeError(
                            f"einsum(): subscript {_label_letter(lab)} has size {size} for operand {k} which does "
                            f"not broadcast with previously seen size {label_size[lab]}"
                        )
                    label_size[lab] = size
                    dim_counts[perm_of[lab]] += 1
                permutation[perm_of[lab]] = dim
                dim += 1
            else:
                prev = permutation[perm_of[lab]]
                if op.shape[dim] != op.shape[prev]:
                    raise RuntimeError(
                        f"einsum(): subscript {_label_letter(lab)} is repeated for operand {k} but the sizes don't "
                        f"match, {op.shape[dim]} != {op.shape[prev]}"
                    )
                op = movedim(op.diagonal(0, prev, dim), -1, prev)
        for p in range(perm_index):
            if permutation[p] == -1:
                op = op.unsqueeze(dim)
                permutation[p] = dim
                dim += 1
        ops.append(op.permute(tuple(permutation)))

    # contract left to right
    while len(ops) > 1:
        a = ops.pop(0)
        b = ops.pop(0)
        sum_dims, a_sum, b_sum = [], [], []
        for d in range(out_num_dim, perm_index):
            if a.shape[d] != 1 and b.shape[d] != 1:
                dim_counts[d] -= 1
                if dim_counts[d] == 1:
                    sum_dims.append(d)
                    dim_counts[d] = 0
            elif dim_counts[d] == 1:
                if a.shape[d] != 1:
                    a_sum.append(d)
                    dim_counts[d] = 0
                elif b.shape[d] != 1:
                    b_sum.append(d)
                    dim_counts[d] = 0
        if a_sum:
            a = a.sum(a_sum, keepdim=True)
        if b_sum:
            b = b.sum(b_sum, keepdim=True)
        ops.insert(0, _sumproduct_pair(a, b, sum_dims))

    if perm_index - out_num_dim > 0:
        if num_ops > 1:
            return ops[0].view(tuple(ops[0].shape[:out_num_dim]))
        return ops[0].sum(list(range(out_num_dim, perm_index)))
    return ops[0]


# ---- clamp's aliases, NaN handling, products with a bias -----------------------------------
#
# Written as the ops they are made of, in the order torch's kernels round (so the same
# values). addcmul, addcdiv, lerp, addr, nan_to_num and nansum are native (src/ops/fused.rs,
# src/ops/reduce.rs).


def clamp_min(input: Tensor, min) -> Tensor:  # noqa: A002
    """``clamp(input, min=min)`` (recorded as clamp's node)."""
    return input.clamp(min=min)


def clamp_max(input: Tensor, max) -> Tensor:  # noqa: A002
    """``clamp(input, max=max)`` (recorded as clamp's node)."""
    return input.clamp(max=max)


def clamp_min_(input: Tensor, min) -> Tensor:  # noqa: A002
    """In-place version of `clamp_min()`. Returns this tensor."""
    return input.clamp_(min=min)


def clamp_max_(input: Tensor, max) -> Tensor:  # noqa: A002
    """In-place version of `clamp_max()`. Returns this tensor."""
    return input.clamp_(max=max)


def nanmean(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """The mean of the elements that are not NaN (NaN where all are)."""
    if not (input.is_floating_point() or (dtype is not None and dtype.is_floating_point)):
        raise NotImplementedError(
            f"nanmean(): expected input to have floating point or complex dtype but got {_scalar_type_name(input.dtype)}"
        )
    count = input.isnan().logical_not()
    count = count.sum() if dim is None else count.sum(dim, keepdim=keepdim)
    return input.nansum(dim, keepdim, dtype=dtype) / count


def count_nonzero(input: Tensor, dim=None) -> Tensor:
    """The number of non-zero elements (along ``dim``, an int or a tuple of ints)."""
    nz = input != 0
    return nz.sum() if dim is None else nz.sum(dim)


def vdot(input: Tensor, other: Tensor) -> Tensor:
    """The dot product of two 1-D tensors (for real tensors, ``dot``)."""
    if input.dim() != 1 or other.dim() != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.dim()}D and {other.dim()}D tensors")
    return input.dot(other)


def _scaled(prod: Tensor, input: Tensor, beta, alpha) -> Tensor:
    # beta * input + alpha * prod; beta == 0 ignores input (NaN and inf in it too), as BLAS
    if alpha != 1:
        prod = prod * alpha
    if beta == 0:
        return prod
    return (input if beta == 1 else input * beta) + prod


def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * (mat @ vec)``."""
    return _scaled(mat.mv(vec), input, beta, alpha)


def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * (batch1 @ batch2)``, batched."""
    return _scaled(batch1.bmm(batch2), input, beta, alpha)


def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``beta * input + alpha * sum_b(batch1[b] @ batch2[b])``."""
    return _scaled(batch1.bmm(batch2).sum(0), input, beta, alpha)


def _in_place(fn):
    def method(self: Tensor, *args, **kwargs) -> Tensor:
        return self.copy_(fn(self.clone() if self.requires_grad else self, *args, **kwargs))

    method.__name__ = method.__qualname__ = fn.__name__ + "_"
    method.__doc__ = f"In-place version of `{fn.__name__}()`. Returns this tensor."
    return method


addmv_ = _in_place(addmv)
baddbmm_ = _in_place(baddbmm)
addbmm_ = _in_place(addbmm)


def logit(input: Tensor, eps: float | None = None) -> Tensor:
    """``log(p / (1 - p))``, ``p`` clamped to ``[eps, 1 - eps]`` when ``eps`` is given."""
    x = input if input.is_floating_point() else input.float()
    if eps is not None:
        x = x.clamp(eps, 1 - eps)
    return (x / (1 - x)).log()


def logit_(input: Tensor, eps: float | None = None) -> Tensor:
    """In-place version of `logit()`. Returns this tensor."""
    # from a copy: the derivative reads the input, which the write overwrites (torch's
    # in-place node keeps the original too)
    return input.copy_(logit(input.clone() if input.requires_grad else input, eps))


def _moments(input, dim, unbiased, keepdim, correction, fn):
    kw = {"keepdim": keepdim}
    if correction is not None:
        kw["correction"] = correction
    elif unbiased is not None:
        kw["unbiased"] = unbiased
    dims = () if dim is None else (dim,)
    return getattr(input, fn)(*dims, **kw), input.mean(*dims, keepdim=keepdim)


def var_mean(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
    """``(var(input, ...), mean(input, ...))`` over the same dims."""
    if isinstance(dim, bool) and unbiased is None:
        dim, unbiased = None, dim
    return _moments(input, dim, unbiased, keepdim, correction, "var")


def std_mean(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
    """``(std(input, ...), mean(input, ...))`` over the same dims."""
    if isinstance(dim, bool) and unbiased is None:
        dim, unbiased = None, dim
    return _moments(input, dim, unbiased, keepdim, correction, "std")


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """The cosine of the angle between ``x1`` and ``x2`` along ``dim`` (broadcast), each
    divided by its norm clamped below at ``eps``: ATen's algorithm."""
    from rgrad import broadcast_tensors, no_grad

    a, b = broadcast_tensors(x1, x2)
    n1 = a.norm(2, dim, keepdim=True).clone()
    n2 = b.norm(2, dim, keepdim=True).clone()
    with no_grad():
        n1.clamp_(min=eps)
        n2.clamp_(min=eps)
    return ((a / n1) * (b / n2)).sum(dim)


def broadcast_tensors(*tensors):
    """The tensors expanded to their common broadcast shape (views)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    shape: list[int] = []
    for t in tensors:
        s = list(t.shape)
        if len(s) > len(shape):
            shape = [1] * (len(s) - len(shape)) + shape
        s = [1] * (len(shape) - len(s)) + s
        for i, (x, y) in enumerate(zip(shape, s)):
            if x != y and x != 1 and y != 1:
                raise RuntimeError(
                    f"The size of tensor a ({x}) must match the size of tensor b ({y}) at non-singleton dimension {i}"
                )
            shape[i] = y if x == 1 else x
    return tuple(t.expand(tuple(shape)) for t in tensors)


def _as_double(v):
    """A float_power operand in float64: a tensor cast (recorded as ToCopyBackward0 when it
    is not float64 already), a number as it is."""
    if isinstance(v, Tensor):
        return v.to(_C.float64)
    if isinstance(v, (bool, int, float)):
        return float(v)
    return v


def float_power(input, exponent) -> Tensor:
    """``input ** exponent`` in double precision (float64), whatever the operands' dtypes."""
    if not isinstance(input, Tensor) and not isinstance(exponent, Tensor):
        raise TypeError(
            "float_power() received an invalid combination of arguments - got "
            f"({type(input).__name__}, {type(exponent).__name__}), but expected one of:\n"
            " * (Tensor input, Tensor exponent, *, Tensor out = None)\n"
            " * (Number self, Tensor exponent, *, Tensor out = None)\n"
            " * (Tensor input, Number exponent, *, Tensor out = None)\n"
        )
    import rgrad

    return rgrad.pow(_as_double(input), _as_double(exponent))


def float_power_(input: Tensor, exponent) -> Tensor:
    """In-place ``float_power``: ``input`` must be float64 already."""
    if input.dtype != _C.float64:
        raise RuntimeError(
            f"the base given to float_power_ has dtype {_scalar_type_name(input.dtype)} but "
            "the operation's result requires dtype Double"
        )
    return input.pow_(_as_double(exponent))


def signbit(input: Tensor) -> Tensor:
    """A bool tensor: whether each element's sign bit is set (-0.0 and -NaN too; for
    integers, whether negative)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"signbit(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if input.dtype == _C.bool:
        return _C.zeros(tuple(input.shape), dtype=_C.bool)
    if not input.is_floating_point():
        return input < 0
    import rgrad

    with rgrad.no_grad():
        return rgrad.ones_like(input).copysign(input) < 0


_CROSS_WARNED = False


def cross(input: Tensor, other: Tensor, dim: int | None = None) -> Tensor:  # noqa: A002
    """The cross product of 3-vectors along ``dim``; without ``dim``, along the first dim of
    ``input`` of size 3 (deprecated in torch, which warns once: ``rgrad.linalg.cross``
    defaults to the last dim)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"cross(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if not isinstance(other, Tensor):
        raise TypeError(f"cross(): argument 'other' (position 2) must be Tensor, not {type(other).__name__}")
    if dim is None:
        global _CROSS_WARNED
        if not _CROSS_WARNED:
            _CROSS_WARNED = True
            import warnings

            warnings.warn(
                "Using torch.cross without specifying the dim arg is deprecated.\n"
                "Please either pass the dim explicitly or simply use torch.linalg.cross.\n"
                "The default value of dim will change to agree with that of linalg.cross in a future release.",
                UserWarning,
                stacklevel=2,
            )
        sizes = list(input.shape)
        if 3 not in sizes:
            raise RuntimeError("no dimension of size 3 in input")
        dim = sizes.index(3)
    return input._linalg_cross(other, dim)


def dist(input: Tensor, other: Tensor, p=2) -> Tensor:  # noqa: A002
    """The p-norm of ``input - other`` (broadcast): one node, DistBackward0 (the native
    ``Tensor.dist``, whose messages count its arguments from the method's)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"dist(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if not isinstance(other, Tensor):
        raise TypeError(f"dist(): argument 'other' (position 2) must be Tensor, not {type(other).__name__}")
    return input.dist(other, p)


def aminmax(input: Tensor, *, dim: int | None = None, keepdim: bool = False):  # noqa: A002
    """The min and the max of ``input`` (over everything, or along ``dim``) as
    ``return_types.aminmax(min, max)``, one pass and one node (AminmaxBackward0)."""
    from rgrad import return_types

    if not isinstance(input, Tensor):
        raise TypeError(f"aminmax(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    return return_types.aminmax(*input._aminmax(dim, keepdim))


# Tensor methods torch has for these
_METHODS = (
    "broadcast_to", "movedim", "moveaxis", "swapaxes", "swapdims", "ravel", "unflatten", "tile",
    "tensor_split", "hsplit", "vsplit", "dsplit", "inner", "kron", "diff", "clamp_min", "clamp_max", "clamp_min_", "clamp_max_",
    "nanmean", "count_nonzero", "vdot", "addmv", "addmv_", "baddbmm", "baddbmm_",
    "addbmm", "addbmm_", "logit", "logit_", "float_power", "float_power_", "signbit", "cross", "aminmax",
)


def install() -> None:
    """The Tensor methods, and the same on vmap's BatchedTensor (where they decompose into
    the batched ops they are made of)."""
    from rgrad.func._batched_tensor import BatchedTensor

    for name in _METHODS:
        setattr(Tensor, name, globals()[name])
        setattr(BatchedTensor, name, globals()[name])
