"""Tensor methods (and their ``rgrad.X`` functions) for ordering ops: sort, argsort,
msort, topk, kthvalue, median. The natives (``Tensor._sort`` ...) compute; these parse
torch's overloads (its TypeErrors) and wrap (values, indices) in ``rgrad.return_types``."""

from __future__ import annotations

import builtins

from rgrad import _C, return_types
from rgrad._tensor import _scalar_type_name

Tensor = _C.Tensor
_NOT_GIVEN = object()


def _type_name(a) -> str:
    return "Tensor" if isinstance(a, Tensor) else type(a).__name__


def _is_int(a) -> builtins.bool:
    return isinstance(a, builtins.int) and not isinstance(a, builtins.bool) or (
        hasattr(a, "__index__") and not isinstance(a, (builtins.bool, builtins.float, Tensor)))


def _invalid(name: str, function: builtins.bool, args, kwargs, overloads) -> TypeError:
    got = ([] if not function else ["Tensor"]) + [_type_name(a) for a in args]
    got += [f"{k}={_type_name(v)}" for k, v in kwargs.items()]
    lines = "".join(f" * ({'Tensor input, ' if function else ''}{o})\n" for o in overloads)
    if not function:
        lines = "".join(f" * ({o})\n" for o in overloads)
    return TypeError(f"{name}() received an invalid combination of arguments - got ({', '.join(got)}), "
                     f"but expected one of:\n{lines}")


def _parse_sort(name: str, function: builtins.bool, args, kwargs, out: str):
    """(dim, descending, stable) from torch's two overloads of sort / argsort: with the
    keyword-only ``stable`` (then dim and descending are keywords too) or without."""
    overloads = (f"*, bool stable, int dim = -1, bool descending = False{out}",
                 f"int dim = -1, bool descending = False{out and ', *' + out}")
    if not function:
        overloads = ("*, bool stable, int dim = -1, bool descending = False",
                     "int dim = -1, bool descending = False")
    bad = _invalid(name, function, args, kwargs, overloads)
    if set(kwargs) - {"dim", "descending", "stable"} or len(args) > 2:
        raise bad
    stable = kwargs.get("stable", _NOT_GIVEN)
    if stable is not _NOT_GIVEN and args:
        raise bad
    names = ("dim", "descending")
    vals = dict(zip(names, args))
    for k in names:
        if k in kwargs:
            if k in vals:
                raise bad
            vals[k] = kwargs[k]
    dim = vals.get("dim", -1)
    descending = vals.get("descending", False)
    if not _is_int(dim) or not isinstance(descending, builtins.bool):
        raise bad
    if stable is not _NOT_GIVEN and stable is not None and not isinstance(stable, builtins.bool):
        raise bad
    flag = None if stable is _NOT_GIVEN else builtins.bool(stable)
    return builtins.int(dim), descending, flag


def _sort_method(self, *args, **kwargs):
    r"""sort(dim=-1, descending=False, *, stable=False) -> (Tensor, LongTensor)

    Sorts the elements along ``dim`` (ascending unless ``descending``); NaN sorts as the
    largest value. With ``stable=True`` equal elements keep their order. Returns the
    named tuple (values, indices).
    """
    dim, descending, stable = _parse_sort("sort", False, args, kwargs, "")
    return return_types.sort(*self._sort(dim, descending, stable))


def sort(input, *args, **kwargs):
    r"""sort(input, dim=-1, descending=False, *, stable=False) -> (Tensor, LongTensor)

    See :meth:`Tensor.sort`.
    """
    _check_input("sort", input)
    dim, descending, stable = _parse_sort("sort", True, args, kwargs, ", tuple of Tensors out = None")
    if stable is None and "stable" not in kwargs:
        return input.sort(dim, descending)
    return input.sort(dim=dim, descending=descending, stable=stable)


def _argsort_method(self, *args, **kwargs):
    r"""argsort(dim=-1, descending=False, *, stable=False) -> LongTensor

    The indices that sort the tensor along ``dim`` (``sort(...).indices``).
    """
    dim, descending, stable = _parse_sort("argsort", False, args, kwargs, "")
    return self.detach()._sort(dim, descending, stable)[1]


def argsort(input, *args, **kwargs):
    r"""argsort(input, dim=-1, descending=False, *, stable=False) -> LongTensor

    See :meth:`Tensor.argsort`.
    """
    _check_input("argsort", input)
    dim, descending, stable = _parse_sort("argsort", True, args, kwargs, ", Tensor out = None")
    if stable is None and "stable" not in kwargs:
        return input.argsort(dim, descending)
    return input.argsort(dim=dim, descending=descending, stable=stable)


def _check_input(name: str, input) -> None:
    # (a vmap's BatchedTensor dispatches the method)
    if not isinstance(input, Tensor) and type(input).__name__ != "BatchedTensor":
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")


def _check_int(name: str, arg: str, pos: int, v) -> int:
    if not _is_int(v):
        raise TypeError(f"{name}(): argument '{arg}' (position {pos}) must be int, not {type(v).__name__}")
    return builtins.int(v)


def _check_bool(name: str, arg: str, pos: int, v) -> builtins.bool:
    if not isinstance(v, builtins.bool):
        raise TypeError(f"{name}(): argument '{arg}' (position {pos}) must be bool, not {type(v).__name__}")
    return v


def _msort(self):
    r"""msort() -> Tensor

    Sorts along the first dim (``sort(dim=0).values``).
    """
    return self._sort(0, False, None)[0]


def msort(input):
    r"""msort(input) -> Tensor

    See :meth:`Tensor.msort`.
    """
    _check_input("msort", input)
    return input.msort()


def _topk(self, k, dim=-1, largest=True, sorted=True):  # noqa: A002
    r"""topk(k, dim=-1, largest=True, sorted=True) -> (Tensor, LongTensor)

    The ``k`` largest (``largest=False``: smallest) elements along ``dim`` and their
    indices, in order when ``sorted``; NaN counts as the largest.
    """
    k = _check_int("topk", "k", 2, k)
    dim = _check_int("topk", "dim", 3, dim)
    largest = _check_bool("topk", "largest", 4, largest)
    sorted = _check_bool("topk", "sorted", 5, sorted)  # noqa: A001
    return return_types.topk(*self._topk(k, dim, largest, sorted))


def _kthvalue(self, k, dim=-1, keepdim=False):
    r"""kthvalue(k, dim=-1, keepdim=False) -> (Tensor, LongTensor)

    The ``k``-th smallest element (1-based) of each slice along ``dim`` and its index.
    """
    k = _check_int("kthvalue", "k", 2, k)
    dim = _check_int("kthvalue", "dim", 3, dim)
    keepdim = _check_bool("kthvalue", "keepdim", 4, keepdim)
    return return_types.kthvalue(*self._kthvalue(k, dim, keepdim))


def _median(self, *args, **kwargs):
    r"""median(dim=None, keepdim=False) -> Tensor or (Tensor, LongTensor)

    The lower median of all elements (a 0-d tensor), or along ``dim`` the lower median
    of each slice and its index (the named tuple (values, indices)); NaN if there is one.
    """
    if not args and not kwargs:
        return self._median(None, False)
    if set(kwargs) - {"dim", "keepdim"} or len(args) > 2 or ("dim" not in kwargs and not args):
        raise TypeError("median() received an invalid combination of arguments")
    vals = dict(zip(("dim", "keepdim"), args))
    vals.update(kwargs)
    dim = _check_int("median", "dim", 2, vals["dim"])
    keepdim = _check_bool("median", "keepdim", 3, vals.get("keepdim", False))
    return return_types.median(*self._median(dim, keepdim))


def _nanmedian(self, *args, **kwargs):
    r"""nanmedian(dim=None, keepdim=False) -> Tensor or (Tensor, LongTensor)

    :meth:`median` of the non-NaN elements: the lower median of all of them (a 0-d
    tensor), or along ``dim`` of each slice with its index; NaN where there are none.
    """
    if not args and not kwargs:
        return self._nanmedian(None, False)
    if set(kwargs) - {"dim", "keepdim"} or len(args) > 2 or ("dim" not in kwargs and not args):
        if not args and set(kwargs) <= {"keepdim"}:
            raise TypeError('nanmedian() missing 1 required positional arguments: "dim"')
        raise TypeError("nanmedian() received an invalid combination of arguments")
    vals = dict(zip(("dim", "keepdim"), args))
    vals.update(kwargs)
    dim = _check_int("nanmedian", "dim", 1, vals["dim"])
    keepdim = _check_bool("nanmedian", "keepdim", 2, vals.get("keepdim", False))
    return return_types.nanmedian(*self._nanmedian(dim, keepdim))


def _mode(self, dim=-1, keepdim=False):
    r"""mode(dim=-1, keepdim=False) -> (Tensor, LongTensor)

    The most frequent value of each slice along ``dim`` (the smallest of equally frequent
    ones) and an index where it occurs, the index torch's CPU kernel reports.
    """
    dim = _check_int("mode", "dim", 1, dim)
    keepdim = _check_bool("mode", "keepdim", 2, keepdim)
    return return_types.mode(*self._mode(dim, keepdim))


# ---- cummax / cummin / logcumsumexp: torch's argument parsing (its TypeErrors) over the
# natives ``Tensor._cummax`` ...


def _dim_int(v) -> builtins.bool:
    """Whether ``v`` passes torch's parser as an int (a 0-d int64 tensor does)."""
    if isinstance(v, Tensor):
        return v.dim() == 0 and str(v.dtype) == "rgrad.int64"
    return _is_int(v)


def _parse_dim_args(name: str, function: builtins.bool, args, kwargs) -> int:
    """``dim`` from ``(dim)`` (a method) or ``(input, dim, *, out=None)`` (a function), as
    torch's parser checks them: the count of positionals, each parameter (given twice,
    missing, of a wrong type), then unknown keywords."""
    params = ("input", "dim") if function else ("dim",)
    if len(args) > len(params):
        n = len(params)
        raise TypeError(f"{name}() takes {n} positional argument{'s' if n != 1 else ''} but {len(args)} were given")
    for i, p in enumerate(params):
        if i < len(args):
            if p in kwargs:
                raise TypeError(f"{name}() got multiple values for argument '{p}'")
            v, where = args[i], f" (position {i + 1})"
        elif p in kwargs:
            v, where = kwargs[p], ""
        else:
            missing = params[len(args):]
            n = len(missing)
            names = ", ".join(f'"{m}"' for m in missing)
            raise TypeError(f"{name}() missing {n} required positional argument{'s' if n == 1 else ''}: {names}")
        if p == "input" and not isinstance(v, Tensor) and type(v).__name__ != "BatchedTensor":
            raise TypeError(f"{name}(): argument 'input'{where} must be Tensor, not {type(v).__name__}")
        if p == "dim" and not _dim_int(v):
            raise TypeError(f"{name}(): argument 'dim'{where} must be int, not {_type_name(v)}")
    allowed = set(params) | ({"out"} if function else set())
    for k in kwargs:
        if k not in allowed:
            raise TypeError(f"{name}() got an unexpected keyword argument '{k}'")
    if function and kwargs.get("out") is not None:
        raise TypeError(f"{name}(): the out= argument is not supported by rgrad")
    return builtins.int(args[-1] if len(args) == len(params) else kwargs["dim"])


def _cummax_method(self, *args, **kwargs):
    r"""cummax(dim) -> (Tensor, LongTensor)

    The running maximum of the elements along ``dim`` and the index of each (of equal
    values the last; a NaN, once seen, propagates). Returns the named tuple
    (values, indices).
    """
    return return_types.cummax(*self._cummax(_parse_dim_args("cummax", False, args, kwargs)))


def _cummin_method(self, *args, **kwargs):
    r"""cummin(dim) -> (Tensor, LongTensor)

    The running minimum of the elements along ``dim`` and the index of each (of equal
    values the last; a NaN, once seen, propagates). Returns the named tuple
    (values, indices).
    """
    return return_types.cummin(*self._cummin(_parse_dim_args("cummin", False, args, kwargs)))


def _logcumsumexp_method(self, *args, **kwargs):
    r"""logcumsumexp(dim) -> Tensor

    The running ``log(sum(exp(x)))`` of the elements along ``dim`` (float dtypes).
    """
    return self._logcumsumexp(_parse_dim_args("logcumsumexp", False, args, kwargs))


def cummax(*args, **kwargs):
    r"""cummax(input, dim, *, out=None) -> (Tensor, LongTensor)

    See :meth:`Tensor.cummax`.
    """
    dim = _parse_dim_args("cummax", True, args, kwargs)
    x = args[0] if args else kwargs["input"]
    return x.cummax(dim)


def cummin(*args, **kwargs):
    r"""cummin(input, dim, *, out=None) -> (Tensor, LongTensor)

    See :meth:`Tensor.cummin`.
    """
    dim = _parse_dim_args("cummin", True, args, kwargs)
    x = args[0] if args else kwargs["input"]
    return x.cummin(dim)


def logcumsumexp(*args, **kwargs):
    r"""logcumsumexp(input, dim, *, out=None) -> Tensor

    See :meth:`Tensor.logcumsumexp`.
    """
    dim = _parse_dim_args("logcumsumexp", True, args, kwargs)
    x = args[0] if args else kwargs["input"]
    return x.logcumsumexp(dim)


for _name, _fn in {
    "cummax": _cummax_method,
    "cummin": _cummin_method,
    "logcumsumexp": _logcumsumexp_method,
    "sort": _sort_method,
    "argsort": _argsort_method,
    "msort": _msort,
    "topk": _topk,
    "kthvalue": _kthvalue,
    "median": _median,
    "nanmedian": _nanmedian,
    "mode": _mode,
}.items():
    _fn.__name__ = _name
    _fn.__qualname__ = f"Tensor.{_name}"
    setattr(Tensor, _name, _fn)



def topk(input, *args, **kwargs):
    r"""topk(input, k, dim=-1, largest=True, sorted=True) -> (Tensor, LongTensor)

    See :meth:`Tensor.topk`.
    """
    _check_input("topk", input)
    return input.topk(*args, **kwargs)


def kthvalue(input, *args, **kwargs):
    r"""kthvalue(input, k, dim=-1, keepdim=False) -> (Tensor, LongTensor)

    See :meth:`Tensor.kthvalue`.
    """
    _check_input("kthvalue", input)
    return input.kthvalue(*args, **kwargs)


def median(input, *args, **kwargs):
    r"""median(input, dim=None, keepdim=False) -> Tensor or (Tensor, LongTensor)

    See :meth:`Tensor.median`.
    """
    _check_input("median", input)
    return input.median(*args, **kwargs)


def nanmedian(input, *args, **kwargs):
    r"""nanmedian(input, dim=None, keepdim=False) -> Tensor or (Tensor, LongTensor)

    See :meth:`Tensor.nanmedian`.
    """
    _check_input("nanmedian", input)
    return input.nanmedian(*args, **kwargs)


def mode(input, *args, **kwargs):
    r"""mode(input, dim=-1, keepdim=False) -> (Tensor, LongTensor)

    See :meth:`Tensor.mode`.
    """
    _check_input("mode", input)
    return input.mode(*args, **kwargs)


# ---- the scatter family: function forms of the native methods (through the method, so
# that a vmap's BatchedTensor dispatches them), nonzero / argwhere, take_along_dim


def _function_of(name: str, doc_args: str):
    def f(input, *args, **kwargs):
        _check_input(name, input)
        return getattr(input, name)(*args, **kwargs)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"{name}(input, {doc_args}) -> Tensor\n\nSee :meth:`Tensor.{name}`.\n"
    return f


scatter = _function_of("scatter", "dim, index, src")
scatter_add = _function_of("scatter_add", "dim, index, src")
scatter_reduce = _function_of("scatter_reduce", "dim, index, src, reduce, *, include_self=True")
index_add = _function_of("index_add", "dim, index, source, *, alpha=1")
index_copy = _function_of("index_copy", "dim, index, source")
index_fill = _function_of("index_fill", "dim, index, value")
masked_select = _function_of("masked_select", "mask")


def _nonzero(self, *, as_tuple=False):
    r"""nonzero(*, as_tuple=False) -> LongTensor or tuple of LongTensors

    The coordinates of the nonzero elements, one row each (``[n, ndim]``); with
    ``as_tuple=True``, one 1-D tensor per dim (a 0-d tensor counts as 1-D).
    """
    if not as_tuple:
        return self._nonzero()
    t = self.reshape(1) if self.dim() == 0 else self
    return t._nonzero().unbind(1)


def nonzero(input, *, as_tuple=False):
    r"""nonzero(input, *, as_tuple=False) -> LongTensor or tuple of LongTensors

    See :meth:`Tensor.nonzero`.
    """
    _check_input("nonzero", input)
    return input.nonzero(as_tuple=as_tuple)


def _argwhere(self):
    r"""argwhere() -> LongTensor

    The coordinates of the nonzero elements, ``[n, ndim]`` (``nonzero()``).
    """
    return self._nonzero()


def argwhere(input):
    r"""argwhere(input) -> LongTensor

    See :meth:`Tensor.argwhere`.
    """
    _check_input("argwhere", input)
    return input.argwhere()




def _infer_size(a, b):
    n = builtins.max(len(a), len(b))
    a, b = [1] * (n - len(a)) + list(a), [1] * (n - len(b)) + list(b)
    out = []
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y and x != 1 and y != 1:
            raise RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b ({y}) "
                               f"at non-singleton dimension {i}")
        out.append(y if x == 1 else x)
    return out


def _take_along_dim(self, indices, dim=None):
    r"""take_along_dim(indices, dim=None) -> Tensor

    Picks values along ``dim`` at ``indices`` (broadcast with this tensor except along
    ``dim``): ``gather`` after broadcasting; with ``dim=None`` from the flattened tensor.
    """
    if str(indices.dtype).split(".")[-1] != "int64":
        raise RuntimeError("torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{_scalar_type_name(indices.dtype)}")
    if dim is None:
        return self.view(-1).gather(0, indices.view(-1))
    if self.dim() != indices.dim():
        raise RuntimeError("torch.take_along_dim(): input and indices should have the same number of dimensions, "
                           f"but got {self.dim()} dimensions for input, and {indices.dim()} dimensions for indices")
    n = builtins.max(self.dim(), 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    d = dim % n
    ss, isz = list(self.shape), list(indices.shape)
    s2 = list(ss)
    if s2:
        s2[d] = isz[d]
    idx = indices.expand(*_infer_size(s2, isz))
    i2 = list(isz)
    if i2:
        i2[d] = ss[d]
    x = self.expand(*_infer_size(i2, ss))
    return x.gather(d, idx)


def take_along_dim(input, indices, dim=None):
    r"""take_along_dim(input, indices, dim=None) -> Tensor

    See :meth:`Tensor.take_along_dim`.
    """
    _check_input("take_along_dim", input)
    return input.take_along_dim(indices, dim)


for _name, _fn in {"nonzero": _nonzero, "argwhere": _argwhere, "take_along_dim": _take_along_dim}.items():
    _fn.__name__ = _name
    _fn.__qualname__ = f"Tensor.{_name}"
    setattr(Tensor, _name, _fn)
