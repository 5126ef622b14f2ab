"""torch.special's functions that rgrad has: the Bessel functions and the regularized
incomplete gamma functions (python/rgrad/_composite5.py, src/ops/activation.rs)."""

from rgrad._composite5 import i0, igamma, igammac, special_i0e, special_i1, special_i1e

__all__ = ["i0", "i0e", "i1", "i1e", "gammainc", "gammaincc"]

i0e = special_i0e
i1 = special_i1
i1e = special_i1e


def gammainc(input, other):  # noqa: A002
    """The regularized lower incomplete gamma function (torch.special.gammainc: igamma)."""
    return igamma(input, other)


def gammaincc(input, other):  # noqa: A002
    """The regularized upper incomplete gamma function (torch.special.gammaincc: igammac)."""
    return igammac(input, other)


i0e.__name__ = i0e.__qualname__ = "i0e"
i1.__name__ = i1.__qualname__ = "i1"
i1e.__name__ = i1e.__qualname__ = "i1e"
