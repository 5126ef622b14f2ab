"""Every public op has an entry in tests/op_db.py.

The public callables are ``rgrad.__all__``'s functions, ``rgrad.Tensor``'s methods and
operators, and ``rgrad.nn.functional.__all__``. Each must either be named by an op_db
entry (``add``, ``Tensor.add``, ``__add__``, ``nn.functional.relu``, or the same with a
``.variant`` suffix such as ``max.dim``; in-place methods such as ``Tensor.add_`` come
from their out-of-place entry's ``inplace=`` flag) or be listed in ``EXCLUDED`` with the
reason it needs no op_db entry. A new public op without either fails this test.
"""

from __future__ import annotations

import types

import rgrad
from op_db import op_db

_FACTORY = "factory: makes a tensor from sizes or data, no tensor input (test_api.py)"
_RANDOM = "random numbers or the generator's state: checked bit for bit against torch's streams in test_random.py"
_QUERY = "queries metadata and returns a python value, not a tensor"
_AUTOGRAD = "autograd bookkeeping, not an op (test_engine.py, test_function.py)"
_PROTOCOL = "python protocol: converts to a python value or container (test_api.py)"

_CLOSE = "composite of ==, abs, <=, isfinite (each has its entry), no gradient; tests/test_closeness.py against torch"

_REMOVED = "torch's removed function: raises torch's RuntimeError naming its linalg replacement (test_linalg_decomp.py)"

EXCLUDED: dict[str, str] = {
    "chain_matmul": "deprecated (warns): multi_dot of its arguments, whose op_db entry it shares "
    "(test_linalg_decomp.py against torch)",
    "lu": "deprecated (warns): linalg.lu_factor(_ex)'s op, whose op_db entries it shares (test_linalg_decomp.py)",
    "Tensor.lu": "deprecated (warns): linalg.lu_factor(_ex)'s op, whose op_db entries it shares (test_linalg_decomp.py)",
    "cholesky": _REMOVED, "Tensor.cholesky": _REMOVED, "solve": _REMOVED, "Tensor.solve": _REMOVED,
    # -- rgrad functions
    "set_default_dtype": "a process-wide setting, not an op: tests/test_default_dtype.py against torch",
    "Tensor.register_post_accumulate_grad_hook": "a hook, not an op: tests/test_graph_api.py against torch",
    "get_default_dtype": "a process-wide setting, not an op: tests/test_default_dtype.py against torch",
    "isclose": _CLOSE,
    "Tensor.isclose": _CLOSE,
    "allclose": "a Python bool: isclose(...).all(); tests/test_closeness.py against torch",
    "Tensor.allclose": "a Python bool: isclose(...).all(); tests/test_closeness.py against torch",
    "equal": "a Python bool: sizes and == (each has its entry); tests/test_closeness.py against torch",
    "Tensor.equal": "a Python bool: sizes and == (each has its entry); tests/test_closeness.py against torch",
    "clamp_min_": "function form of Tensor.clamp_min_ (the clamp_min entry's inplace=)",
    "clamp_max_": "function form of Tensor.clamp_max_ (the clamp_max entry's inplace=)",
    "nan_to_num_": "function form of Tensor.nan_to_num_ (the nan_to_num entry's inplace=)",
    "addmv_": "function form of Tensor.addmv_ (the addmv entry's inplace=)",
    "logit_": "function form of Tensor.logit_ (the logit entry's inplace=)",
    "index_put_": "function form of Tensor.index_put_ (the Tensor.index_put entry's inplace=)",
    "qr": "removed in torch 2.15 (use linalg.qr, which has its rows): raises torch's RuntimeError, "
          "tests/test_linalg_spectral.py",
    "Tensor.qr": "removed in torch 2.15 (use linalg.qr, which has its rows): raises torch's RuntimeError, "
                 "tests/test_linalg_spectral.py",
    "lstsq": "removed in torch 2.15 (use linalg.lstsq, which has its rows): raises torch's RuntimeError, "
             "tests/test_linalg_more.py",
    "Tensor.lstsq": "removed in torch 2.15 (use linalg.lstsq, which has its rows): raises torch's RuntimeError, "
                    "tests/test_linalg_more.py",
    "tensor": _FACTORY,
    "compile_step": "records and replays a whole training step, not an op: tests/test_step_replay.py",
    "zeros": _FACTORY,
    "ones": _FACTORY,
    "full": _FACTORY,
    "empty": _FACTORY,
    "zeros_like": _FACTORY + "; only the input's shape and dtype are used",
    "ones_like": _FACTORY + "; only the input's shape and dtype are used",
    "full_like": _FACTORY + "; only the input's shape and dtype are used",
    "arange": _FACTORY,
    "linspace": _FACTORY,
    "eye": _FACTORY,
    "from_numpy": _FACTORY + "; shares the array's memory (test_exchange.py)",
    "from_dlpack": _FACTORY + "; shares the producer's memory (test_exchange.py)",
    "rand": _RANDOM,
    "randn": _RANDOM,
    "randint": _RANDOM,
    "rand_like": _RANDOM,
    "randn_like": _RANDOM,
    "manual_seed": _RANDOM,
    "randint_like": _RANDOM,
    "randperm": _RANDOM,
    "bernoulli": _RANDOM,
    "multinomial": _RANDOM,
    "normal": _RANDOM,
    "seed": _RANDOM,
    "initial_seed": _RANDOM,
    "get_rng_state": _RANDOM,
    "set_rng_state": _RANDOM,
    "Tensor.bernoulli": _RANDOM,
    "Tensor.bernoulli_": _RANDOM,
    "Tensor.cauchy_": _RANDOM,
    "Tensor.exponential_": _RANDOM,
    "Tensor.geometric_": _RANDOM,
    "Tensor.log_normal_": _RANDOM,
    "Tensor.multinomial": _RANDOM,
    "Tensor.normal_": _RANDOM,
    "Tensor.random_": _RANDOM,
    "Tensor.uniform_": _RANDOM,
    "is_grad_enabled": "grad-mode query (test_grad_mode.py)",
    "is_inference_mode_enabled": "grad-mode query (test_grad_mode.py)",
    "is_anomaly_enabled": "anomaly-mode switch (test_anomaly_mode.py)",
    "is_anomaly_check_nan_enabled": "anomaly-mode switch (test_anomaly_mode.py)",
    "set_anomaly_enabled": "anomaly-mode switch (test_anomaly_mode.py)",
    "set_num_threads": "thread-pool setting (test_determinism.py)",
    "get_num_threads": "thread-pool setting (test_determinism.py)",
    "is_tensor": _QUERY,
    "numel": _QUERY,
    # -- Tensor methods
    "Tensor.backward": _AUTOGRAD,
    "Tensor.register_hook": _AUTOGRAD,
    "Tensor.retain_grad": _AUTOGRAD,
    "Tensor.requires_grad_": _AUTOGRAD,
    "Tensor.detach_": _AUTOGRAD + "; detach() is an entry",
    "Tensor.dim": _QUERY,
    "Tensor.size": _QUERY,
    "Tensor.stride": _QUERY,
    "Tensor.storage_offset": _QUERY,
    "Tensor.numel": _QUERY,
    "Tensor.nelement": _QUERY,
    "Tensor.element_size": _QUERY,
    "Tensor.data_ptr": _QUERY,
    "Tensor.is_contiguous": _QUERY,
    "Tensor.is_floating_point": _QUERY,
    "Tensor.item": _PROTOCOL,
    "Tensor.tolist": _PROTOCOL,
    "Tensor.numpy": _PROTOCOL,
    "Tensor.new_tensor": _FACTORY,
    "Tensor.new_zeros": _FACTORY,
    "Tensor.new_ones": _FACTORY,
    "Tensor.cpu": "device move to the CPU: the tensor itself for a CPU tensor (test_cuda_nogpu.py); "
                  "CUDA tensors: tests_gpu/test_cuda_runtime.py",
    "Tensor.cuda": "device move to a GPU: torch's no-driver error here (test_cuda_nogpu.py); "
                   "with a GPU: tests_gpu/test_cuda_runtime.py",
    "get_default_device": "the default device, not an op (test_cuda_nogpu.py)",
    "set_default_device": "sets the default device, not an op (test_cuda_nogpu.py)",
    "Tensor.get_device": "the device ordinal, -1 on the CPU (test_cuda_nogpu.py), not an op",
    # dtype conversions that the float64 finite-difference checks cannot cover: to float32
    # loses the precision they need, torch's int() is int32, which rgrad does not have
    "Tensor.float": "dtype conversion to float32: test_ops.py::test_dtype_conversion_grads",
    "Tensor.int": "dtype conversion: torch gives int32, rgrad has no int32 (int64 instead)",
    # -- python protocols and operators that are not ops
    "__dlpack__": _PROTOCOL.replace("test_api.py", "test_exchange.py") + ": a DLPack capsule of the memory",
    "__dlpack_device__": _QUERY,
    "__array__": _PROTOCOL,
    "__bool__": _PROTOCOL,
    "__float__": _PROTOCOL,
    "__int__": _PROTOCOL,
    "__index__": _PROTOCOL,
    "__len__": _PROTOCOL,
    "__iter__": _PROTOCOL + "; iterating is unbind(0), an entry",
    "__delitem__": "always raises, as torch's does (test_api.py)",
    "vmap": "a function transform (torch.vmap is torch.func.vmap): every batching rule is tested against the loop "
            "in test_vmap.py",
    # (helper-41)
    "is_signed": _QUERY + " (tests/test_misc_ops.py against torch)",
    "broadcast_shapes": "computes a shape from shapes, no tensor (tests/test_misc_ops.py against torch)",
    "vander": "forward values against torch in test_stats_inplace_views.py; its backward raises as torch's does "
    "(torch's cumprod saves the slice it then overwrites), so no gradient checks apply",
    "lu_solve": "deprecated (warns): linalg.lu_solve with its arguments reversed, whose op_db entry it shares "
    "(test_linalg_extras.py against torch)",
    "Tensor.lu_solve": "deprecated (warns): linalg.lu_solve with its arguments reversed, whose op_db entry it "
    "shares (test_linalg_extras.py against torch)",
    "logspace": _FACTORY + " (tests/test_misc_ops.py against torch, bit for bit)",
    "gcd_": "function form of Tensor.gcd_ (its entry; tests/test_misc_ops.py against torch)",
    "lcm_": "function form of Tensor.lcm_ (its entry; tests/test_misc_ops.py against torch)",
    # (helper-45)
    **{n: _FACTORY + " (tests/test_activation_special_ops.py against torch, bit for bit)"
       for n in ("bartlett_window", "blackman_window", "hamming_window", "hann_window", "kaiser_window")},
    "histogram": "no gradient (torch's is not differentiable): tests/test_activation_special_ops.py against torch",
    "Tensor.histogram": "method form of histogram (tests/test_activation_special_ops.py against torch)",
    "gradient": "returns a tuple of composites of slices, sub, div and cat (each op has its entry): "
                "tests/test_activation_special_ops.py against torch, values and gradients",
    **{n: "in-place form of the entry without the underscore (tests/test_activation_special_ops.py: values, "
          "nodes and gradients against torch)"
       for n in ("threshold_", "celu_", "selu_", "rrelu_", "i0_", "Tensor.igamma_", "Tensor.igammac_",
                 "nn.functional.threshold_", "nn.functional.elu_",
                 "nn.functional.celu_", "nn.functional.selu_", "nn.functional.hardtanh_",
                 "nn.functional.leaky_relu_", "nn.functional.rrelu_")},
}

# torch's aliases, function forms of in-place methods, queries and composites of
# python/rgrad/_aliases.py and python/rgrad/_composite2.py: each compared with torch (values, dtype, node, grads, errors) in
# tests/test_aliases.py and tests/test_composite2.py; the op each names has its entry
_ALIAS = ("alias, function form, query or composite from _aliases.py or _composite2.py: tests/test_aliases.py, "
          "tests/test_composite2.py against torch")
_ENTRIES = {op.name for op in op_db}
for _n in [*rgrad._aliases.__all__, *(f"Tensor.{m}" for m in rgrad._aliases.METHODS),
           *rgrad._composite2.__all__, *(f"Tensor.{m}" for m in rgrad._composite2._METHODS)]:
    if _n not in _ENTRIES and not any(e.startswith(_n + ".") for e in _ENTRIES):
        EXCLUDED.setdefault(_n, _ALIAS)


def _public_ops() -> list[str]:
    """The public callables, in op_db's spelling."""
    names = []
    for name in rgrad.__all__:
        obj = getattr(rgrad, name)
        if isinstance(obj, (type, types.ModuleType)) or not callable(obj):
            continue  # classes (Tensor, Size, device, dtype), modules, dtype objects
        names.append(name)
    skip = set(dir(object))  # __eq__, __repr__, __getattribute__, ...: checked or not ops
    for name in dir(rgrad.Tensor):
        is_dunder = name.startswith("__") and name.endswith("__")
        if (name.startswith("_") and not is_dunder) or (name in skip and name not in ("__eq__", "__ne__", "__lt__",
                                                                                        "__le__", "__gt__", "__ge__")):
            continue
        if not callable(getattr(rgrad.Tensor, name)):
            continue  # properties (shape, grad, T, ...) and constants (__array_priority__)
        names.append(name if is_dunder else f"Tensor.{name}")
    names += [f"nn.functional.{name}" for name in rgrad.nn.functional.__all__]
    return names


def test_every_public_op_has_an_op_db_entry():
    entries = {op.name for op in op_db}

    def covered(name):
        return name in entries or any(e.startswith(name + ".") for e in entries)

    public = _public_ops()
    missing = [n for n in public if not covered(n) and n not in EXCLUDED]
    assert not missing, (
        f"{len(missing)} public op(s) without an entry in tests/op_db.py (add one, an inplace= flag on the "
        f"out-of-place entry, or an EXCLUDED line with the reason): {', '.join(missing)}"
    )


def test_exclusions_are_public_and_not_entries():
    """The exclusion list names only public callables that have no entry (no stale lines)."""
    entries = {op.name for op in op_db}
    public = set(_public_ops())
    assert not [n for n in EXCLUDED if n not in public], "EXCLUDED names something that is not public"
    assert not [n for n in EXCLUDED if n in entries], "EXCLUDED names something that has an entry"
