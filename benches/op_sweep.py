"""Every op of the op table at three sizes, rgrad against torch: the kernel sweep.

Each case runs one op on float32 (or `--dtype float64`) inputs of three sizes: tiny (4x4: the per-call
overhead), 256x256 and 2048x2048 (4M elements: the kernels' throughput). For each size
it prints both libraries' median time per call, their ratio (worst first) and a summary
line (how many cases are within 1.25x of torch, issue 15's bar). With `--scaling`,
rgrad's 4M cases also run on 1 thread: the speed-up of 2 threads over 1 (issue 15 asks
for at least 1.7x from every memory-bound kernel; compute-bound ones scale further).
torch is optional (without it, rgrad's times alone). Both libraries use the same thread
count (`--threads`, default: rgrad's default, the machine's CPUs).

    python benches/op_sweep.py                        # all cases, all sizes (~4 min)
    python benches/op_sweep.py --sizes 256 --ops 'sum|amax'
    python benches/op_sweep.py --sizes 4M --scaling --json sweep.json

tests/test_op_sweep_coverage.py checks that every op of tests/op_db.py has a case here
or a reason not to.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import statistics
import time
from typing import Any, Callable

from _machine import cpu_model

SIZES = {"tiny": (4, 4), "256": (256, 256), "4M": (2048, 2048)}
BAR = 1.25  # issue 15: no op slower than this ratio at 256x256 and at 4M
SCALING_BAR = 1.7  # issue 15: 2 threads over 1 at 4M, memory-bound kernels

# The matrix products at 2048 are compute-bound (17 GFLOP each) and are measured by
# benches/gemm_bench.py at the shapes that matter; here only at the smaller sizes.
# The inputs' float dtype (`--dtype`).
DTYPE = "float32"

NOT_AT_4M = {"mm", "matmul", "bmm", "addmm", "nn.functional.linear", "outer"}


def _quiet(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` without its deprecation warning (triangular_solve's)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return fn(*args)


def cases(T: Any, shape: tuple[int, int]) -> dict[str, Callable[[], Any]]:
    """name -> a call of the op on inputs of `shape` (made once, outside the timing)."""
    F = T.nn.functional
    T.manual_seed(0)
    n, m = shape
    dt = getattr(T, DTYPE)
    a, b = T.randn(n, m, dtype=dt), T.randn(n, m, dtype=dt)
    pos, unit = a.abs() + 0.5, a.tanh() * 0.99  # log/sqrt/... and asin/atanh/... domains
    ge1 = pos + 1.0
    v, col = T.randn(m, dtype=dt), T.randn(n, 1, dtype=dt)
    mask = a > 0
    idx_rows, idx_cols = T.randint(0, n, (n,)), T.randint(0, m, (n, m))
    ai = (a * 10).to(T.int64)
    lo, hi = T.full((n, m), -0.5, dtype=dt), T.full((n, m), 0.5, dtype=dt)
    target = T.randint(0, m, (n,))
    a3, b3 = a.reshape(4, n // 4, m), T.randn(4, m, n // 4)  # (every size is square, n % 4 == 0)
    k = min(n, m, 256)
    sq = a[:k, :k] + k * T.eye(k, dtype=dt)
    spd = sq @ sq.mT
    chol = T.linalg.cholesky(spd)
    unary = {
        "abs": a, "acos": unit, "acosh": ge1, "asin": unit, "asinh": a, "atan": a,
        "atanh": unit, "cos": a, "cosh": a, "digamma": pos, "erf": a, "erfc": a,
        "erfinv": unit, "exp": a, "expm1": a, "frac": a, "lgamma": pos, "log": pos,
        "log1p": pos, "neg": a, "reciprocal": pos, "relu": a, "rsqrt": pos, "sigmoid": a,
        "sign": a, "sin": a, "sinh": a, "sqrt": pos, "square": a, "tan": unit, "tanh": a,
        "trunc": a, "isfinite": a, "isinf": a, "isnan": a, "logical_not": mask,
        "floor": a, "ceil": a, "round": a, "sgn": a, "log2": pos, "log10": pos, "exp2": a,
        "deg2rad": a, "rad2deg": a, "logit": unit.abs(), "nan_to_num": a, "sinc": a, "signbit": a,
    }
    out: dict[str, Callable[[], Any]] = {
        name: (lambda f=getattr(T, name), x=x: f(x)) for name, x in unary.items()
    }
    binary = {
        "add": (a, b), "sub": (a, b), "mul": (a, b), "div": (a, b), "true_divide": (a, b),
        "pow": (pos, b), "atan2": (a, b), "hypot": (a, b), "maximum": (a, b),
        "minimum": (a, b), "fmod": (a, pos), "remainder": (a, pos), "floor_divide": (a, pos),
        "logaddexp": (a, b), "xlogy": (pos, b), "logical_and": (mask, mask),
        "logical_or": (mask, mask), "eq": (a, b), "ne": (a, b), "lt": (a, b), "le": (a, b),
        "gt": (a, b), "ge": (a, b), "fmax": (a, b), "fmin": (a, b), "copysign": (a, b),
        "logaddexp2": (a, b), "heaviside": (a, b), "nextafter": (a, b), "ldexp": (a, b.round()),
        "float_power": (pos, b),
    }
    out.update({name: (lambda f=getattr(T, name), x=x, y=y: f(x, y)) for name, (x, y) in binary.items()})
    out.update({
        # numbers, broadcasts, integers
        "add.scalar": lambda: a + 2.0, "mul.scalar": lambda: a * 2.0, "div.scalar": lambda: a / 3.0,
        "pow.scalar_exponent": lambda: pos ** 2.5, "pow.square": lambda: a ** 2,
        "pow.scalar_base": lambda: 2.0 ** a, "eq.scalar": lambda: a == 0.0,
        "bias add": lambda: a + v, "column mul": lambda: a * col, "int64 add": lambda: ai + ai,
        # selection
        "where": lambda: T.where(mask, a, b), "where.scalar": lambda: T.where(mask, a, 0.0),
        "masked_fill": lambda: a.masked_fill(mask, 0.0), "clamp": lambda: a.clamp(-0.5, 0.5),
        # linalg.rs's ops and scatter_reduce
        "cross": lambda: T.cross(a[:3], b[:3], dim=0), "dist": lambda: T.dist(a, b),
        "aminmax": lambda: T.aminmax(a, dim=1), "scatter_reduce": lambda: a.scatter_reduce(1, idx_cols, b, "amax"),
        "clamp.tensor_bounds": lambda: a.clamp(lo, hi), "clip": lambda: a.clip(-0.5, 0.5),
        # decomp.rs's factorizations and solves: one matrix of at most 256 x 256 (a 2048 x 2048
        # factorization is a different benchmark)
        "linalg.solve": lambda: T.linalg.solve(sq, sq[:, :8]), "linalg.cholesky": lambda: T.linalg.cholesky(spd),
        "det": lambda: T.det(sq), "slogdet": lambda: T.slogdet(sq), "logdet": lambda: T.logdet(spd),
        "inverse": lambda: T.inverse(sq), "cholesky_solve": lambda: T.cholesky_solve(sq[:, :8], chol),
        "cholesky_inverse": lambda: T.cholesky_inverse(chol), "matrix_power": lambda: T.matrix_power(sq, 5),
        "matrix_exp": lambda: T.matrix_exp(sq / k), "lu_unpack": lambda: T.lu_unpack(*T.linalg.lu_factor(sq)),
        # the spectral decompositions (O(n³) on the host): a 64x64 block at most
        "linalg.eigh 64x64": lambda: T.linalg.eigh(a[:64, :64] + a[:64, :64].mT),
        "linalg.svd 64x64": lambda: T.linalg.svd(a[:64, :64]),
        "linalg.qr 64x64": lambda: T.linalg.qr(a[:64, :64]),
        "svd 64x64": lambda: T.svd(a[:64, :64]),
        "nuclear_norm 64x64": lambda: T.linalg.matrix_norm(a[:64, :64], "nuc"),
        "pinverse 64x64": lambda: T.pinverse(a[:64, :64]),
        "linalg.eigvalsh 64x64": lambda: T.linalg.eigvalsh(a[:64, :64] + a[:64, :64].mT),
        "linalg.svdvals 64x64": lambda: T.linalg.svdvals(a[:64, :64]),
        "matrix_rank 64x64": lambda: T.linalg.matrix_rank(a[:64, :64]),
        "cond 64x64": lambda: T.linalg.cond(a[:64, :64]),
        # (helper-46) compositions over the ops above, on a 32x32 block (Python-level reflector loops)
        "linalg.lstsq 64x32": lambda: T.linalg.lstsq(a[:64, :32], a[:64, :4]),
        "triangular_solve 32x32": lambda: _quiet(T.triangular_solve, a[:32, :4], sq[:32, :32].triu()),
        "geqrf 32x32": lambda: T.geqrf(a[:32, :32]),
        "orgqr 32x32": lambda: T.orgqr(a[:32, :32], a[0, :32]),
        "ormqr 32x32": lambda: T.ormqr(a[:32, :32], a[0, :32], a[:32, :4]),
        "fill_diagonal_": lambda: a[:32, :32].clone().fill_diagonal_(1.0),
        "linalg.ldl_factor 16x16": lambda: T.linalg.ldl_factor(spd[:16, :16]),
        # reductions
        "sum": lambda: a.sum(), "sum(0)": lambda: a.sum(0), "sum(1)": lambda: a.sum(1),
        "mean": lambda: a.mean(), "mean(0)": lambda: a.mean(0), "prod(0)": lambda: unit.prod(0),
        "prod(1)": lambda: unit.prod(1), "amax(0)": lambda: a.amax(0), "amax(1)": lambda: a.amax(1),
        "amin(1)": lambda: a.amin(1), "max": lambda: a.max(), "min": lambda: a.min(),
        "max.dim(1)": lambda: a.max(1), "min.dim(0)": lambda: a.min(0),
        "argmax(1)": lambda: a.argmax(1), "argmin(0)": lambda: a.argmin(0),
        "var": lambda: a.var(), "var(1)": lambda: a.var(1), "std": lambda: a.std(),
        "std(0)": lambda: a.std(0), "norm": lambda: a.norm(), "norm(1)": lambda: a.norm(dim=1),
        "logsumexp(1)": lambda: a.logsumexp(1), "logsumexp(0)": lambda: a.logsumexp(0),
        "softmax(1)": lambda: a.softmax(1), "softmax(0)": lambda: a.softmax(0),
        "log_softmax(1)": lambda: a.log_softmax(1), "all": lambda: mask.all(),
        "any": lambda: mask.any(),
        # data movement
        "clone": lambda: a.clone(), "contiguous(t)": lambda: a.t().contiguous(),
        "transpose copy": lambda: a.transpose(0, 1).clone(),
        "permute copy": lambda: a3.permute(2, 0, 1).contiguous(),
        "cat": lambda: T.cat([a, b]), "cat(1)": lambda: T.cat([a, b], 1),
        "concat": lambda: T.concat([a, b]), "stack": lambda: T.stack([a, b]),
        "repeat": lambda: v.repeat(n, 1), "expand copy": lambda: v.expand(n, m).contiguous(),
        "index_select": lambda: a.index_select(0, idx_rows), "gather": lambda: a.gather(1, idx_cols),
        "x[idx]": lambda: a[idx_rows], "x[::2, ::2]": lambda: a[::2, ::2].contiguous(),
        "index_put_": lambda: a.index_put_((idx_rows,), b), "narrow copy": lambda: a.narrow(1, 0, m // 2).clone(),
        "select": lambda: a.select(0, 1), "split": lambda: a.split(max(n // 4, 1)),
        "chunk": lambda: a.chunk(4), "unbind": lambda: a.unbind(0),
        "flatten": lambda: a.t().flatten(), "reshape": lambda: a.t().reshape(-1),
        "squeeze": lambda: a.unsqueeze(0).squeeze(0), "unsqueeze": lambda: a.unsqueeze(1),
        "permute": lambda: a.permute(1, 0), "t": lambda: a.t(), "transpose": lambda: a.transpose(0, 1),
        "expand": lambda: v.expand(n, m), "detach": lambda: a.detach(),
        "copy_": lambda: b.copy_(a), "to(float64)": lambda: a.double(),
        "to(int64)": lambda: a.to(T.int64), "to(bool)": lambda: a.bool(),
        "zeros_like": lambda: T.zeros_like(a), "fill_": lambda: b.fill_(1.0), "zero_": lambda: b.zero_(),
        # flip, roll, rot90, triangles, diagonals, cumulative ops
        "flip(0)": lambda: a.flip(0), "flip(1)": lambda: a.flip(1), "fliplr": lambda: a.fliplr(),
        "flipud": lambda: a.flipud(), "roll(1)": lambda: a.roll(3, 1), "roll": lambda: a.roll(5),
        "rot90": lambda: a.rot90(), "tril": lambda: a.tril(), "triu(1)": lambda: a.triu(1),
        "diagonal": lambda: a.diagonal(), "diag_embed": lambda: v.diag_embed(), "diag": lambda: a.diag(),
        "trace": lambda: a.trace(), "cumsum(1)": lambda: a.cumsum(1), "cumsum(0)": lambda: a.cumsum(0),
        "cumprod(1)": lambda: unit.cumprod(1), "cummax(1)": lambda: a.cummax(1), "cummin(0)": lambda: a.cummin(0),
        "logcumsumexp(1)": lambda: a.logcumsumexp(1), "logcumsumexp(0)": lambda: a.logcumsumexp(0),
        # ordering and scatter ops
        "sort(1)": lambda: a.sort(1), "sort(0) stable": lambda: a.sort(dim=0, stable=True),
        "argsort(1)": lambda: a.argsort(1), "msort": lambda: a.msort(),
        "topk(1)": lambda: a.topk(min(4, m), 1), "kthvalue(1)": lambda: a.kthvalue(max(m // 2, 1), 1),
        "median": lambda: a.median(), "median(1)": lambda: a.median(1),
        "nanmedian": lambda: a.nanmedian(), "nanmedian(1)": lambda: a.nanmedian(1),
        "mode(1)": lambda: (a * 4).round().mode(1), "quantile(1)": lambda: a.quantile(0.3, 1),
        "nanquantile(1)": lambda: a.nanquantile(0.3, 1),
        "scatter": lambda: a.scatter(1, idx_cols, b), "scatter_add": lambda: a.scatter_add(1, idx_cols, b),
        "index_add": lambda: a.index_add(0, idx_rows, b), "index_copy": lambda: a.index_copy(0, idx_rows, b),
        "index_fill": lambda: a.index_fill(0, idx_rows, 1.0), "masked_select": lambda: a.masked_select(mask),
        "nonzero": lambda: mask.nonzero(), "argwhere": lambda: mask.argwhere(),
        "take_along_dim": lambda: T.take_along_dim(a, idx_cols, 1),
        # torch's composites (python/rgrad/_composite.py)
        "round(decimals=2)": lambda: a.round(decimals=2), "nansum": lambda: T.nansum(a),
        "nanmean(1)": lambda: T.nanmean(a, 1), "count_nonzero": lambda: T.count_nonzero(a),
        "addcmul": lambda: T.addcmul(a, b, a, value=0.5), "addcdiv": lambda: T.addcdiv(a, b, pos, value=0.5),
        "lerp": lambda: T.lerp(a, b, 0.3), "clamp_min": lambda: a.clamp_min(0.0), "clamp_max": lambda: a.clamp_max(0.0),
        "addmv": lambda: T.addmv(v, a, v), "addr": lambda: T.addr(a, v, v), "vdot": lambda: T.vdot(v, v),
        "baddbmm": lambda: T.baddbmm(a3 @ b3, a3, b3), "addbmm": lambda: T.addbmm(a3[0] @ b3[0], a3, b3),
        "einsum(ij,jk)": lambda: T.einsum("ij,jk->ik", a, b), "einsum(bij->bji)": lambda: T.einsum("bij->bji", a3),
        "tensordot": lambda: T.tensordot(a, b, 1), "inner": lambda: T.inner(a, b), "kron": lambda: T.kron(v[:16], v[:16]),
        "diff(1)": lambda: T.diff(a, dim=1), "tile": lambda: T.tile(v, (2,)), "ravel": lambda: a.t().ravel(),
        "movedim copy": lambda: T.movedim(a3, 0, 2).contiguous(), "moveaxis": lambda: T.moveaxis(a3, 0, 2),
        "swapaxes": lambda: T.swapaxes(a, 0, 1), "swapdims": lambda: T.swapdims(a, 0, 1),
        "unflatten": lambda: a.unflatten(1, (2, m // 2)), "broadcast_to": lambda: T.broadcast_to(v, (n, m)),
        "broadcast_tensors": lambda: T.broadcast_tensors(col, v), "atleast_1d": lambda: T.atleast_1d(a),
        "atleast_2d": lambda: T.atleast_2d(v), "atleast_3d": lambda: T.atleast_3d(a),
        "hstack": lambda: T.hstack([a, b]), "vstack": lambda: T.vstack([a, b]), "row_stack": lambda: T.row_stack([a, b]),
        "dstack": lambda: T.dstack([a, b]), "column_stack": lambda: T.column_stack([v, v]),
        "tensor_split": lambda: T.tensor_split(a, 3, 1), "hsplit": lambda: T.hsplit(a, 2),
        "vsplit": lambda: T.vsplit(a, 2), "dsplit": lambda: T.dsplit(a3.reshape(2, -1, 2), 2),
        "meshgrid": lambda: T.meshgrid(v, v, indexing="ij"), "cartesian_prod": lambda: T.cartesian_prod(v[:64], v[:64]),
        "var_mean(1)": lambda: T.var_mean(a, 1), "std_mean": lambda: T.std_mean(a),
        "cosine_similarity": lambda: T.cosine_similarity(a, b),
        "nn.functional.cosine_similarity": lambda: F.cosine_similarity(a, b),
        # in-place arithmetic (b is scratch: its values do not matter)
        "add_(alpha)": lambda: b.add_(a, alpha=0.5), "mul_": lambda: b.mul_(1.0),
        # an optimiser's in-place steps (small values: b stays finite however many calls)
        "addcmul_": lambda: b.addcmul_(a, a, value=1e-6), "addcdiv_": lambda: b.addcdiv_(a, pos, value=1e-6),
        "lerp_": lambda: b.lerp_(a, 0.1),
        "sub_": lambda: b.sub_(a), "masked_fill_": lambda: b.masked_fill_(mask, 0.0),
        # linear algebra
        "mm": lambda: T.mm(a, b), "matmul": lambda: T.matmul(a, b.t()), "mv": lambda: a @ v,
        "dot": lambda: a.flatten().dot(b.flatten()), "outer": lambda: T.outer(v, v),
        "bmm": lambda: T.bmm(a3, b3), "addmm": lambda: T.addmm(v, a, b),
        "nn.functional.linear": lambda: F.linear(a, b, v),
        # nn.functional
        "nn.functional.cross_entropy": lambda: F.cross_entropy(a, target),
        "nn.functional.nll_loss": lambda: F.nll_loss(a, target),
        "nn.functional.mse_loss": lambda: F.mse_loss(a, b),
        "nn.functional.relu": lambda: F.relu(a), "nn.functional.sigmoid": lambda: F.sigmoid(a),
        "nn.functional.tanh": lambda: F.tanh(a), "nn.functional.softmax": lambda: F.softmax(a, 1),
        "nn.functional.log_softmax": lambda: F.log_softmax(a, 1),
        "polygamma": lambda: T.polygamma(1, pos),
        # random numbers
        "randn": lambda: T.randn(n, m), "rand": lambda: T.rand(n, m),
        "randint": lambda: T.randint(0, 100, (n, m)), "normal_": lambda: b.normal_(),
        "uniform_": lambda: b.uniform_(),
    })
    # (helper-41) distances and searches: cdist / pdist on row blocks (the full 2048² pairs
    # would be 17 GFLOP), searches of every element in a sorted row of m boundaries
    cols, bounds = a[:, :16], v.sort().values
    out.update({
        "cdist": lambda: T.cdist(a, b[: builtins_max(n // 8, 1)]),
        "cdist p=1": lambda: T.cdist(cols, b[: builtins_max(n // 8, 1), :16], p=1.0),
        "cdist no mm": lambda: T.cdist(cols, b[: builtins_max(n // 8, 1), :16],
                                       compute_mode="donot_use_mm_for_euclid_dist"),
        "pdist": lambda: T.pdist(cols[: builtins_max(n // 4, 2)]),
        "nn.functional.pdist": lambda: F.pdist(cols[: builtins_max(n // 4, 2)], 1.0),
        "pairwise_distance": lambda: T.pairwise_distance(a, b),
        "nn.functional.pairwise_distance": lambda: F.pairwise_distance(a, b, 1.0),
        "searchsorted": lambda: T.searchsorted(bounds, a), "bucketize": lambda: T.bucketize(a, bounds, right=True),
        "unique": lambda: T.unique(ai), "unique inverse counts": lambda: T.unique(ai, return_inverse=True,
                                                                              return_counts=True),
        "unique_consecutive": lambda: T.unique_consecutive(ai.flatten().sort()[0]),
        "bincount": lambda: T.bincount(ai.flatten().abs()), "histc": lambda: T.histc(a, bins=100),
        "block_diag": lambda: T.block_diag(a[: builtins_max(n // 4, 1)], b[: builtins_max(n // 4, 1)]),
        "isin": lambda: T.isin(ai, ai[0]), "isposinf": lambda: T.isposinf(a), "isneginf": lambda: T.isneginf(a),
        "isreal": lambda: T.isreal(a), "gcd": lambda: T.gcd(ai, ai.flip(0)), "lcm": lambda: T.lcm(ai, ai.flip(0)),
    })
    # (helper-44) views, scatters and copies: the views are timed with a copy (contiguous)
    # so that their reads count; the scatters write rows, diagonals, masks, flat indices
    half = builtins_max(n // 2, 1)
    flat_idx = T.randint(0, n * m, (n,))
    out.update({
        "as_strided": lambda: a.as_strided((n - 1, m), (m, 1), 1).contiguous(),
        "unfold": lambda: a.unfold(1, 4, 2).contiguous(),
        "as_strided_copy": lambda: T.as_strided_copy(a, (half, m), (2 * m, 1)),
        "select_scatter": lambda: T.select_scatter(a, v, 0, 1),
        "slice_scatter": lambda: T.slice_scatter(a, b[:half], 0, 0, half),
        "diagonal_scatter": lambda: T.diagonal_scatter(a, a.diagonal()),
        "as_strided_scatter": lambda: T.as_strided_scatter(a, b[:half], (half, m), (2 * m, 1)),
        "masked_scatter": lambda: T.masked_scatter(a, mask, b),
        "index_reduce": lambda: a.index_reduce(0, idx_rows, b, "amax"),
        "put": lambda: a.put(flat_idx, v.repeat(n // m + 1)[:n]),
        "renorm": lambda: T.renorm(a, 2, 0, 1.0),
        "split_with_sizes": lambda: T.split_with_sizes(a, [half, n - half]),
        "unsafe_split": lambda: T.unsafe_split(a, half), "unsafe_chunk": lambda: T.unsafe_chunk(a, 2),
        "unsafe_split_with_sizes": lambda: T.unsafe_split_with_sizes(a, [half, n - half]),
        "split_copy": lambda: T.split_copy(a, half), "split_with_sizes_copy": lambda: T.split_with_sizes_copy(
            a, [half, n - half]),
        "alias_copy": lambda: T.alias_copy(a), "detach_copy": lambda: T.detach_copy(a),
        "diagonal_copy": lambda: T.diagonal_copy(a), "expand_copy": lambda: T.expand_copy(v, (n, m)),
        "permute_copy": lambda: T.permute_copy(a, (1, 0)), "select_copy": lambda: T.select_copy(a, 1, 0),
        "slice_copy": lambda: T.slice_copy(a, 0, 0, half), "squeeze_copy": lambda: T.squeeze_copy(col),
        "t_copy": lambda: T.t_copy(a), "transpose_copy": lambda: T.transpose_copy(a, 0, 1),
        "unbind_copy": lambda: T.unbind_copy(a3), "unfold_copy": lambda: T.unfold_copy(a, 1, 4, 2),
        "unsqueeze_copy": lambda: T.unsqueeze_copy(a, 0), "view_copy": lambda: T.view_copy(a, (-1,)),
        "narrow_copy": lambda: T.narrow_copy(a, 0, 0, half),
    })
    # (helper-45) activations, special functions, kl_div (python/rgrad/_composite5.py)
    w1 = a[:1, 0].contiguous()
    out.update({f"nn.functional.{k}": (lambda k: lambda: getattr(F, k)(a))(k) for k in (
        "threshold", "hardshrink", "softshrink", "elu", "celu", "selu", "hardtanh", "relu6", "leaky_relu", "gelu",
        "silu", "mish", "softplus", "hardsigmoid", "hardswish", "logsigmoid", "softsign", "tanhshrink", "rrelu")
        if k != "threshold"})
    out.update({
        "nn.functional.threshold": lambda: F.threshold(a, 0.1, 2.0),
        "nn.functional.gelu tanh": lambda: F.gelu(a, approximate="tanh"),
        "threshold": lambda: T.threshold(a, 0.1, 2.0), "hardshrink": lambda: T.hardshrink(a),
        "celu": lambda: T.celu(a), "selu": lambda: T.selu(a), "rrelu": lambda: T.rrelu(a),
        "prelu": lambda: T.prelu(a, w1), "nn.functional.prelu": lambda: F.prelu(a, w1),
        "mvlgamma": lambda: T.mvlgamma(pos + 1, 2), "angle": lambda: T.angle(a),
        "rsub": lambda: T.rsub(a, b), "rsub number": lambda: T.rsub(a, 2.0, alpha=3),
        "kl_div": lambda: T.kl_div(a, pos), "nn.functional.kl_div": lambda: F.kl_div(a, pos, reduction="batchmean"),
        "i0": lambda: T.i0(a), "special.i0e": lambda: T.special.i0e(a), "special.i1": lambda: T.special.i1(a),
        "special.i1e": lambda: T.special.i1e(a), "igamma": lambda: T.igamma(pos, ge1),
        "igammac": lambda: T.igammac(pos, ge1),
    })
    return out


def builtins_max(x: int, y: int) -> int:
    return x if x > y else y


def time_us(f: Callable[[], Any], budget_s: float) -> float:
    """Median seconds per call (in µs) over batches of calls, about `budget_s` in all."""
    f()
    t0 = time.perf_counter()
    f()
    once = max(time.perf_counter() - t0, 1e-7)
    per_batch = max(1, min(100, int(0.002 / once)))  # batches of about 2 ms
    batches = max(5, min(25, int(budget_s / (once * per_batch))))
    times = []
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(per_batch):
            f()
        times.append((time.perf_counter() - t0) / per_batch)
    return statistics.median(times) * 1e6


def sweep(T: Any, size: str, pattern: re.Pattern, budget_s: float) -> dict[str, float]:
    out = {}
    for name, f in cases(T, SIZES[size]).items():
        if not pattern.search(name) or (size == "4M" and name in NOT_AT_4M):
            continue
        out[name] = time_us(f, budget_s)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--only", choices=["rgrad", "torch"])
    ap.add_argument("--sizes", default="tiny,256,4M", help="comma-separated: tiny, 256, 4M")
    ap.add_argument("--ops", default="", help="a regular expression the case names must match")
    ap.add_argument("--threads", type=int, help="both libraries' thread count")
    ap.add_argument("--scaling", action="store_true", help="rgrad at 4M on 1 thread too")
    ap.add_argument("--budget", type=float, default=0.15, help="seconds of timing per case")
    ap.add_argument("--json", help="write the figures to this file")
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"],
                    help="the float inputs' dtype")
    args = ap.parse_args()
    global DTYPE
    DTYPE = args.dtype
    sizes = [s.strip() for s in args.sizes.split(",") if s.strip()]
    for s in sizes:
        if s not in SIZES:
            ap.error(f"unknown size {s!r} (choose from {', '.join(SIZES)})")
    pattern = re.compile(args.ops)
    libs = {}
    for name in [args.only] if args.only else ["rgrad", "torch"]:
        try:
            libs[name] = importlib.import_module(name)
        except ImportError:
            print(f"({name} is not installed)")
    threads = args.threads
    if threads is None and "rgrad" in libs:
        threads = libs["rgrad"].get_num_threads()
    for T in libs.values():
        if threads:
            T.set_num_threads(threads)
    print(f"CPU: {cpu_model()}; {os.cpu_count()} CPUs; {threads} threads each; {DTYPE}")
    print(", ".join(f"{k} {getattr(T, '__version__', '?')}" for k, T in libs.items()))
    report: dict[str, Any] = {"cpu": cpu_model(), "threads": threads, "sizes": {}}
    summary = []
    for size in sizes:
        res = {k: sweep(T, size, pattern, args.budget) for k, T in libs.items()}
        one = {}
        if args.scaling and size == "4M" and "rgrad" in libs and threads and threads > 1:
            R = libs["rgrad"]
            R.set_num_threads(1)
            one = sweep(R, size, pattern, args.budget)
            R.set_num_threads(threads)
        names = list(next(iter(res.values())))
        both = len(res) == 2
        ratio = {op: res["rgrad"][op] / res["torch"][op] for op in names} if both else {}
        head = f"{'case (' + size + ')':<28}" + "".join(f"{k + ' us':>12}" for k in res)
        print("\n" + head + ("   ratio" if both else "") + (f"  1 thread us  2 over 1" if one else ""))
        for op in sorted(names, key=lambda o: -ratio.get(o, 0)):
            row = f"{op:<28}" + "".join(f"{res[k][op]:12.2f}" for k in res)
            if both:
                row += f"  {ratio[op]:6.2f}" + (" *" if ratio[op] > BAR else "  ")
            if one:
                s = one[op] / res["rgrad"][op]
                row += f"  {one[op]:11.2f}  {s:8.2f}"
            print(row)
        if both:
            slow = sorted((op for op in names if ratio[op] > BAR), key=lambda o: -ratio[o])
            line = (f"{size}: {len(names) - len(slow)} of {len(names)} cases within {BAR}x of torch"
                    + (f"; slowest {', '.join(f'{o} {ratio[o]:.2f}' for o in slow[:5])}" if slow else ""))
            summary.append(line)
        if one:
            weak = [op for op in names if one[op] / res["rgrad"][op] < SCALING_BAR]
            summary.append(f"{size}: {len(names) - len(weak)} of {len(names)} cases at least "
                           f"{SCALING_BAR}x faster on {threads} threads than on 1")
        report["sizes"][size] = {"times_us": res, "ratio": ratio, "rgrad_1_thread_us": one}
    print("\nsummary")
    for line in summary:
        print("  " + line)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=1)


if __name__ == "__main__":
    main()
