"""Tensor printing that reproduces ``torch._tensor_str`` output.

The layout rules (number formatting, alignment, line wrapping, summarization
and the trailing ``dtype=``/``grad_fn=`` suffixes) follow PyTorch's
``torch/_tensor_str.py`` so that ``repr`` of an rgrad tensor reads exactly like
the equivalent torch tensor, with ``rgrad.`` in place of ``torch.`` in dtype
names.  Only the standard library is used, to keep ``import rgrad`` cheap.

The tensor is converted with a single ``tolist()`` call and everything else is
done on the nested Python lists.
"""

import math
import sys

__all__ = ["get_printoptions", "set_printoptions", "tensor_repr"]


class _PrinterOptions:
    """Global print options; the class attributes are torch's defaults."""

    precision = 4
    threshold = 1000
    edgeitems = 3
    linewidth = 80
    sci_mode = None


PRINT_OPTS = _PrinterOptions()

_PROFILES = {
    "default": {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80},
    "short": {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80},
    "full": {"precision": 4, "threshold": math.inf, "edgeitems": 3, "linewidth": 80},
}

# dtypes whose name is not printed, as torch does (the default float dtype, int64,
# bool).  An empty tensor prints every dtype except the default float one.
def _default_float_name() -> str:
    from rgrad import _C

    return "float64" if _C._default_float_is_f64() else "float32"

# Placeholder for the rows/elements elided by summarization.
_SKIP = object()


def set_printoptions(
    precision=None,
    threshold=None,
    edgeitems=None,
    linewidth=None,
    profile=None,
    sci_mode=None,
):
    """Sets the options used when printing tensors (same as torch).

    A ``profile`` is applied first and any other given option overrides it.
    Options left as ``None`` keep their current value, except ``sci_mode``,
    which is always assigned (so omitting it restores automatic selection).

    Args:
        precision: Number of digits after the decimal point for floating
            point output (default 4).
        threshold: Number of elements above which the output is summarized
            with ``...`` (default 1000).
        edgeitems: Number of items shown at the beginning and end of each
            dimension when summarizing (default 3).
        linewidth: Number of characters per line used for wrapping
            (default 80).
        profile: One of ``'default'``, ``'short'`` or ``'full'``; an unknown
            name is ignored, as in torch.
        sci_mode: ``True`` to force scientific notation, ``False`` to forbid
            it, ``None`` to choose automatically.
    """
    if profile in _PROFILES:
        for name, value in _PROFILES[profile].items():
            setattr(PRINT_OPTS, name, value)
    if precision is not None:
        PRINT_OPTS.precision = precision
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        PRINT_OPTS.linewidth = linewidth
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions():
    """Returns the current print options.

    Returns:
        dict: The keys ``precision``, ``threshold``, ``edgeitems``,
        ``linewidth`` and ``sci_mode`` with their current values.
    """
    return {
        "precision": PRINT_OPTS.precision,
        "threshold": PRINT_OPTS.threshold,
        "edgeitems": PRINT_OPTS.edgeitems,
        "linewidth": PRINT_OPTS.linewidth,
        "sci_mode": PRINT_OPTS.sci_mode,
    }


class _Formatter:
    """Chooses one number format and width for all the values of a tensor."""

    def __init__(self, values, floating):
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        if not floating:
            for value in values:
                self.max_width = max(self.max_width, len(str(value)))
            return

        nonzero_finite = [v for v in values if v != 0 and math.isfinite(v)]
        if not nonzero_finite:
            # Nothing to measure: torch keeps int_mode and ignores sci_mode.
            return
        magnitudes = [abs(v) for v in nonzero_finite]
        vmin, vmax = min(magnitudes), max(magnitudes)
        self.int_mode = all(v == math.ceil(v) for v in nonzero_finite)

        precision = PRINT_OPTS.precision
        too_wide = vmax / vmin > 1000.0 or vmax > 1.0e8
        extra = 0
        if self.int_mode:
            self.sci_mode = too_wide
        else:
            self.sci_mode = too_wide or vmin < 1.0e-4
        if self.sci_mode:
            spec = f".{precision}e"
        elif self.int_mode:
            spec, extra = ".0f", 1  # room for the trailing '.'
        else:
            spec = f".{precision}f"
        for value in nonzero_finite:
            self.max_width = max(self.max_width, len(format(value, spec)) + extra)

        if PRINT_OPTS.sci_mode is not None:
            self.sci_mode = PRINT_OPTS.sci_mode

    def width(self):
        return self.max_width

    def format(self, value):
        if not self.floating:
            text = str(value)
        elif self.sci_mode:
            text = format(value, f"{self.max_width}.{PRINT_OPTS.precision}e")
        elif self.int_mode:
            text = format(value, ".0f")
            if math.isfinite(value):
                text += "."
        else:
            text = format(value, f".{PRINT_OPTS.precision}f")
        return text.rjust(self.max_width)


def _summarize(data, ndim, summarize):
    """Replaces the middle of over-long dimensions by ``_SKIP`` (recursively)."""
    if ndim == 0:
        return data
    edge = PRINT_OPTS.edgeitems
    if summarize and len(data) > 2 * edge:
        # torch slices the last dimension with ``[-edge:]`` and the others with
        # ``range(len - edge, len)``; they only differ when edgeitems == 0.
        tail = data[-edge:] if ndim == 1 else data[len(data) - edge :]
        data = data[:edge] + [_SKIP] + tail
    if ndim == 1:
        return data
    return [
        row if row is _SKIP else _summarize(row, ndim - 1, summarize) for row in data
    ]


def _flatten(data, ndim):
    """Yields the scalars of a (summarized) nested list, skipping ``_SKIP``."""
    if ndim == 0:
        yield data
        return
    for item in data:
        if item is _SKIP:
            continue
        if ndim == 1:
            yield item
        else:
            yield from _flatten(item, ndim - 1)


def _vector_str(data, indent, formatter):
    element_length = formatter.width() + 2  # ", " between elements
    per_line = int(math.floor((PRINT_OPTS.linewidth - indent) / element_length))
    per_line = max(1, per_line)
    items = [" ..." if v is _SKIP else formatter.format(v) for v in data]
    lines = [", ".join(items[i : i + per_line]) for i in range(0, len(items), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested_str(data, ndim, indent, formatter):
    if ndim == 0:
        return formatter.format(data)
    if ndim == 1:
        return _vector_str(data, indent, formatter)
    slices = [
        "..." if row is _SKIP else _nested_str(row, ndim - 1, indent + 1, formatter)
        for row in data
    ]
    return "[" + ("," + "\n" * (ndim - 1) + " " * (indent + 1)).join(slices) + "]"


def _tensor_str(t, indent, floating):
    """Formats the data of a non-empty tensor (without prefix or suffixes)."""
    ndim = t.dim()
    data = _summarize(t.tolist(), ndim, t.numel() > PRINT_OPTS.threshold)
    formatter = _Formatter(list(_flatten(data, ndim)), floating)
    return _nested_str(data, ndim, indent, formatter)


def _add_suffixes(tensor_str, suffixes, indent):
    parts = [tensor_str]
    # torch's line-length estimate (it over-counts by two characters).
    last_line_len = len(tensor_str) - tensor_str.rfind("\n") + 1
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line_len += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


def _grad_fn_name(grad_fn):
    name = grad_fn.name() if hasattr(grad_fn, "name") else type(grad_fn).__name__
    return name.rsplit("::", 1)[-1]


def tensor_repr(t):
    """Returns the torch-style string representation of a tensor.

    Used for both ``Tensor.__repr__`` and ``Tensor.__str__``.

    Args:
        t: The tensor. It must provide ``tolist()``, ``shape``, ``dim()``,
            ``numel()``, ``dtype`` (whose ``str()`` is e.g. ``'rgrad.float32'``
            and which has an ``is_floating_point`` attribute),
            ``requires_grad`` and ``grad_fn``.

    Returns:
        str: For example ``'tensor([1., 2.], requires_grad=True)'``.
    """
    prefix = "tensor("
    indent = len(prefix)
    dtype_str = str(t.dtype)
    dtype_name = dtype_str.rsplit(".", 1)[-1]
    suffixes = []
    # (torch's "Print tensor device": a tensor off the default device names its device)
    dev = getattr(t, "_device_str", "cpu")
    if dev != "cpu":
        suffixes.append(f"device='{dev}'")

    if t.numel() == 0:
        # Print the shape when it is not (0,), and the dtype unless it is the
        # default float one: with no elements it cannot be inferred.
        if t.dim() != 1:
            suffixes.append("size=" + str(tuple(t.shape)))
        if dtype_name != _default_float_name():
            suffixes.append("dtype=" + dtype_str)
        body = "[]"
    else:
        if dtype_name not in (_default_float_name(), "int64", "bool"):
            suffixes.append("dtype=" + dtype_str)
        floating = t.dtype.is_floating_point
        if callable(floating):  # tolerate a method as well as an attribute
            floating = floating()
        body = _tensor_str(t, indent, bool(floating))

    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{_grad_fn_name(t.grad_fn)}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")

    tangent = _tangent(t)
    if tangent is not None:
        suffixes.append(f"tangent={tangent}")

    return _add_suffixes(prefix + body, suffixes, indent)


def _tangent(t):
    """The forward-mode tangent of ``t`` at the current dual level, if any (torch prints it)."""
    forward_ad = sys.modules.get("rgrad.autograd.forward_ad")
    if forward_ad is None or forward_ad._current_level < 0:
        return None
    try:
        return forward_ad.unpack_dual(t).tangent
    except TypeError:  # (not an rgrad tensor: the printing rules are used on stand-ins too)
        return None
