"""CPU step replay (``rgrad.compile_step``): a recorded training step replays to eager's bits.

Every comparison is exact: values as raw bits (``numpy().view``), never approximately. Each
test runs the same step eagerly on one copy of the state and through ``compile_step`` on
another, and compares after every step.
"""

import gc
import sys
import threading

import numpy as np
import pytest

import rgrad
import rgrad.nn.functional as F


def bits(t):
    a = np.ascontiguousarray(t.detach().numpy())
    if a.dtype == np.float32:
        return a.view(np.uint32).tolist()
    if a.dtype == np.float64:
        return a.view(np.uint64).tolist()
    return a.tolist()


def make_mlp(seed, sizes=(20, 16, 16, 5)):
    rgrad.manual_seed(seed)
    params = []
    for fan_in, fan_out in zip(sizes, sizes[1:]):
        w = (rgrad.randn(fan_out, fan_in) * (1.0 / fan_in**0.5)).requires_grad_()
        b = (rgrad.randn(fan_out) * 0.1).requires_grad_()
        params += [w, b]
    return params


def clone_params(params):
    return [p.detach().clone().requires_grad_() for p in params]


def forward(params, x):
    h = x
    n = len(params) // 2
    for i in range(n):
        h = F.linear(h, params[2 * i], params[2 * i + 1])
        if i < n - 1:
            h = F.relu(h)
    return h


def sgd_step_set_to_none(params, lr=0.05):
    """W3's step: forward, nll_loss, backward, ``p -= lr * p.grad``, ``p.grad = None``."""

    def step(x, y):
        loss = F.nll_loss(F.log_softmax(forward(params, x), dim=1), y)
        loss.backward()
        with rgrad.no_grad():
            for p in params:
                p -= lr * p.grad
                p.grad = None
        return loss

    return step


def batches(n, batch=8, features=20, classes=5, seed=1234):
    g = rgrad.Generator().manual_seed(seed)
    return [
        (rgrad.randn(batch, features, generator=g), rgrad.randint(0, classes, (batch,), generator=g))
        for _ in range(n)
    ]


def assert_same(a, b, what):
    assert a.shape == b.shape, what
    assert bits(a) == bits(b), what


# ---- training steps --------------------------------------------------------------------------


def test_mlp_sgd_step_replays_bit_for_bit_with_grads_set_to_none():
    # W3's step on a small MLP: forward, nll_loss, backward, SGD update; the parameters
    # after every step equal the eager copy's bit for bit
    p_eager = make_mlp(0)
    p_comp = clone_params(p_eager)
    data = batches(8)
    eager = sgd_step_set_to_none(p_eager)
    step = rgrad.compile_step(sgd_step_set_to_none(p_comp), *data[0])
    for k, (x, y) in enumerate(data):
        le = eager(x, y)
        lc = step(x, y)
        assert_same(lc, le, f"loss at step {k}")
        assert lc.grad_fn is None
        for i, (pc, pe) in enumerate(zip(p_comp, p_eager)):
            assert_same(pc, pe, f"param {i} at step {k}")
            assert pc.grad is None and pe.grad is None
    # set-to-none steps need no second recording: the first call records, the rest replay
    assert step.recordings == 1
    assert step.replays == len(data) - 1
    assert step.num_kernels > 20
    assert "addmm" in step.kernel_names()


def test_grads_accumulate_across_replays_like_eager():
    # no zeroing: .grad accumulates; the first call records with .grad None (the engine
    # stores), the second records again (.grad set, the engine adds in place), later
    # calls replay that second program
    p_eager = make_mlp(1)
    p_comp = clone_params(p_eager)
    data = batches(6, seed=7)

    def make(params):
        def step(x, y):
            loss = F.nll_loss(F.log_softmax(forward(params, x), dim=1), y)
            loss.backward()
            return loss

        return step

    eager, step = make(p_eager), rgrad.compile_step(make(p_comp), *data[0])
    for k, (x, y) in enumerate(data):
        assert_same(step(x, y), eager(x, y), f"loss at step {k}")
        for i, (pc, pe) in enumerate(zip(p_comp, p_eager)):
            assert_same(pc.grad, pe.grad, f"grad {i} at step {k}")
            assert_same(pc, pe, f"param {i} at step {k}")
    assert step.recordings == 2
    assert step.replays == len(data) - 2
    # the grads are the same tensors from call to call once they exist (added in place)
    g0 = p_comp[0].grad
    step(*data[0])
    assert p_comp[0].grad is g0 or bits(p_comp[0].grad) == bits(g0)


def test_zero_grad_in_place_and_momentum_buffers():
    # p.grad.zero_() at the start (after the first step) and an SGD with momentum whose
    # buffers are tensors made before compiling; parameter versions move as eager's do
    p_eager = make_mlp(2)
    p_comp = clone_params(p_eager)
    data = batches(6, seed=11)

    def make(params, bufs, lr=0.1, mu=0.9):
        def step(x, y):
            for p in params:
                if p.grad is not None:
                    p.grad.zero_()
            loss = F.nll_loss(F.log_softmax(forward(params, x), dim=1), y)
            loss.backward()
            with rgrad.no_grad():
                for p, b in zip(params, bufs):
                    b.mul_(mu).add_(p.grad)
                    p.add_(b, alpha=-lr)
            return loss

        return step

    b_eager = [rgrad.zeros_like(p) for p in p_eager]
    b_comp = [rgrad.zeros_like(p) for p in p_comp]
    eager, step = make(p_eager, b_eager), rgrad.compile_step(make(p_comp, b_comp), *data[0])
    for k, (x, y) in enumerate(data):
        assert_same(step(x, y), eager(x, y), f"loss at step {k}")
        for i in range(len(p_eager)):
            assert_same(p_comp[i], p_eager[i], f"param {i} at step {k}")
            assert_same(p_comp[i].grad, p_eager[i].grad, f"grad {i} at step {k}")
            assert_same(b_comp[i], b_eager[i], f"momentum {i} at step {k}")
            assert p_comp[i]._version == p_eager[i]._version
    assert step.replays >= 3


def test_small_op_chain_like_w1_replays_bit_for_bit():
    # W1: a chain of small elementwise ops on a 1-element leaf, then backward
    def chain(x, a, b, n=150):
        y = x
        for i in range(n):
            r = i % 5
            if r == 0:
                y = y * a
            elif r == 1:
                y = y + b
            elif r == 2:
                y = y.sin()
            elif r == 3:
                y = y.exp() * 0.5
            else:
                y = y.tanh()
        return y

    def make(x, a, b):
        def step(scale):
            x.grad = None
            out = chain(x * scale, a, b).sum()
            out.backward()
            return out, x.grad.clone()

        return step

    rgrad.manual_seed(3)
    xe = rgrad.randn(1).requires_grad_()
    xc = xe.detach().clone().requires_grad_()
    a, b = rgrad.full((1,), 0.9), rgrad.full((1,), 0.1)
    eager, step = make(xe, a, b), rgrad.compile_step(make(xc, a, b), rgrad.ones(1))
    for k in range(5):
        s = rgrad.full((1,), 1.0 + 0.1 * k)
        (oe, ge), (oc, gc_) = eager(s), step(s)
        assert_same(oc, oe, f"chain value at step {k}")
        assert_same(gc_, ge, f"chain grad at step {k}")
        assert_same(xc.grad, xe.grad, f"x.grad at step {k}")
    assert step.replays == 4


def test_dropout_like_rand_mask_draws_fresh_numbers_as_eager():
    # replay k draws what the k-th eager run draws after the same seed
    def make(params):
        def step(x, y):
            h = F.relu(F.linear(x, params[0], params[1]))
            mask = rgrad.rand(h.shape) < 0.7
            h = h * mask / 0.7
            noise = rgrad.rand_like(h)
            h = h + noise * 1e-3
            loss = F.nll_loss(F.log_softmax(F.linear(h, params[2], params[3]), dim=1), y)
            loss.backward()
            with rgrad.no_grad():
                for p in params:
                    p -= 0.1 * p.grad
                    p.grad = None
            return loss, mask

        return step

    p_eager = make_mlp(4, sizes=(20, 32, 5))
    p_comp = clone_params(p_eager)
    data = batches(5, seed=5)
    rgrad.manual_seed(99)
    eager_runs = [make(p_eager)(x, y) for x, y in data]
    eager_state = bits(rgrad.get_rng_state())
    rgrad.manual_seed(99)
    step = rgrad.compile_step(make(p_comp), *data[0])
    masks = []
    for k, ((x, y), (le, me)) in enumerate(zip(data, eager_runs)):
        lc, mc = step(x, y)
        assert_same(lc, le, f"loss at step {k}")
        assert bits(mc) == bits(me), f"mask at step {k}"
        masks.append(bits(mc))
    for i, (pc, pe) in enumerate(zip(p_comp, p_eager)):
        assert_same(pc, pe, f"param {i}")
    # the generator moved on exactly as the eager runs moved it, and the masks differ
    assert bits(rgrad.get_rng_state()) == eager_state
    assert masks[0] != masks[1]
    assert step.replays == len(data) - 1


def test_tensor_indexing_is_replayed_with_new_index_values():
    # index tensors are host plans re-read on every replay (x[idx], gather, index_select)
    def make(w):
        def step(x, idx):
            y = x[idx] * w
            z = y.gather(1, idx.unsqueeze(1).clamp(max=2)).sum() + x.index_select(0, idx).mean()
            z.backward()
            return z

        return step

    rgrad.manual_seed(6)
    we = rgrad.randn(3).requires_grad_()
    wc = we.detach().clone().requires_grad_()
    x = rgrad.randn(6, 3)
    eager, step = make(we), rgrad.compile_step(make(wc), x, rgrad.tensor([0, 1, 2, 3]))
    for k, idx in enumerate([[0, 1, 2, 3], [5, 5, 0, 1], [2, 4, 1, 0], [3, 3, 3, 3]]):
        i = rgrad.tensor(idx)
        assert_same(step(x, i), eager(x, i), f"value at step {k}")
        assert_same(wc.grad, we.grad, f"grad at step {k}")
    assert step.replays >= 2
    # an index out of range at replay raises eager's error
    with pytest.raises(IndexError, match="out of bounds"):
        step(x, rgrad.tensor([0, 1, 2, 9]))


def test_index_put_and_assignment_are_replayed_with_new_index_values():
    # index_put's positions are a host plan too: recomputed from the index tensors on every
    # replay (out of place with autograd, in place on a buffer without), with eager's
    # errors for an index out of range, accumulate=True's duplicates summed in eager's order
    def make(w):
        def step(x, rows, cols):
            y = (x * w).index_put((rows, cols), rgrad.cat([w, w])[:4] * 2.0)
            z = x.clone()
            z[rows] = y[cols] + 1.0  # __setitem__ with a tensor index, recorded by autograd
            acc = rgrad.zeros(6, 3).index_put_((rows,), y[:4], accumulate=True)
            buf = rgrad.zeros(6)
            buf[cols] = 3.0  # in place, nothing recorded
            out = (z * w).sum() + (acc * acc).sum() + (buf * x[:, 0]).sum() + y.sum()
            out.backward()
            return out

        return step

    rgrad.manual_seed(7)
    we = rgrad.randn(3).requires_grad_()
    wc = we.detach().clone().requires_grad_()
    x = rgrad.randn(6, 3)
    t = rgrad.tensor
    eager = make(we)
    step = rgrad.compile_step(make(wc), x, t([0, 1, 2, 3]), t([2, 0, 1, 2]))
    cases = [([0, 1, 2, 3], [2, 0, 1, 2]), ([5, 5, 0, -1], [1, 1, 1, 1]), ([3, 2, 3, 2], [0, 2, 1, -3]),
             ([0, 1, 2, 3], [2, 0, 1, 2])]
    for k, (rows, cols) in enumerate(cases):
        r, c = t(rows), t(cols)
        assert_same(step(x, r, c), eager(x, r, c), f"value at step {k}")
        assert_same(wc.grad, we.grad, f"grad at step {k}")
    assert step.replays >= 2
    with pytest.raises(IndexError, match="out of bounds"):
        step(x, t([0, 1, 2, 6]), t([0, 0, 0, 0]))
    with pytest.raises(IndexError, match="out of bounds"):
        step(x, t([0, 1, 2, 3]), t([0, 0, 0, -4]))
    # and the step still replays after the errors
    r, c = t([1, 1, 4, 4]), t([2, 2, 0, 0])
    assert_same(step(x, r, c), eager(x, r, c), "value after the errors")
    assert_same(wc.grad, we.grad, "grad after the errors")


# ---- refusals ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body, what",
    [
        (lambda x: x.sum().item(), r"item\(\)"),
        (lambda x: x.tolist(), "on the host"),
        (lambda x: x[x > 0].sum(), "on the host"),
        (lambda x: bool((x > 0).any()), r"item\(\)"),
        (lambda x: repr(x), "on the host"),
        (lambda x: x + rgrad.randn(3), "random op"),
        (lambda x: x.max(dim=0), "max/argmax with indices"),
        (lambda x: x * rgrad.from_numpy(__import__("numpy").ones(3, dtype="float32")), "from_numpy / from_dlpack"),
        (lambda x: (x * 2).numpy(), r"numpy\(\)|DLPack export"),
        (lambda x: rgrad.from_dlpack(x * 2), "DLPack export"),
        (lambda x: x.clone().__setitem__(x > 0, 1.0), "on the host"),  # x[mask] = v
    ],
)
def test_host_reads_and_unsupported_ops_are_refused_while_recording(body, what):
    step = rgrad.compile_step(lambda x: body(x), rgrad.ones(3))
    with pytest.raises(RuntimeError, match="compile_step: .*" + what):
        step(rgrad.ones(3))
    # nothing is left recording on this thread, and eager mode works as before
    assert not rgrad._C._step_is_recording()
    assert (rgrad.ones(2) * 2).sum().item() == 4.0


def test_custom_function_is_refused_with_its_name():
    class Twice(rgrad.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    step = rgrad.compile_step(lambda x: Twice.apply(x), rgrad.ones(3))
    with pytest.raises(RuntimeError, match="custom autograd.Function 'Twice'"):
        step(rgrad.ones(3))
    assert not rgrad._C._step_is_recording()


def test_changed_input_shape_or_dtype_is_refused():
    step = rgrad.compile_step(lambda x: (x * 2).sum(), rgrad.ones(4, 3))
    step(rgrad.ones(4, 3))
    with pytest.raises(RuntimeError, match=r"input 0 has shape \[5, 3\].*recorded for shape \[4, 3\]"):
        step(rgrad.ones(5, 3))
    with pytest.raises(RuntimeError, match=r"dtype rgrad.float64.*static shapes"):
        step(rgrad.ones(4, 3, dtype=rgrad.float64))
    with pytest.raises(TypeError, match="takes 1 inputs but 2 were given"):
        step(rgrad.ones(4, 3), rgrad.ones(4, 3))
    # the step still replays, and reset() makes the next call record again
    assert bits(step(rgrad.full((4, 3), 2.0))) == bits(rgrad.tensor(48.0))
    assert (step.recordings, step.replays) == (1, 1)
    step.reset()
    assert bits(step(rgrad.full((4, 3), 3.0))) == bits(rgrad.tensor(72.0))
    assert (step.recordings, step.replays) == (2, 1)


def test_changed_nll_plan_is_refused_at_replay():
    # nll_loss's mean divides by the count of targets not ignored: a replay whose targets
    # change that count raises instead of dividing by the recorded one
    w = rgrad.randn(4, 3).requires_grad_()

    def f(x, y):
        loss = F.nll_loss(F.log_softmax(x @ w, dim=1), y, ignore_index=-100)
        loss.backward()
        return loss

    step = rgrad.compile_step(f, rgrad.randn(5, 4), rgrad.tensor([0, 1, 2, 0, 1]))
    step(rgrad.randn(5, 4), rgrad.tensor([0, 1, 2, 0, 1]))
    step(rgrad.randn(5, 4), rgrad.tensor([2, 2, 2, 0, 1]))
    with pytest.raises(RuntimeError, match="nll_loss counted 5 targets.*have 4"):
        step(rgrad.randn(5, 4), rgrad.tensor([-100, 1, 2, 0, 1]))


def test_nested_recording_is_refused():
    inner = rgrad.compile_step(lambda x: x * 2, rgrad.ones(2))
    inner(rgrad.ones(2))
    outer = rgrad.compile_step(lambda x: inner(x), rgrad.ones(2))
    with pytest.raises(RuntimeError, match="cannot be replayed while a step is being recorded"):
        outer(rgrad.ones(2))
    assert not rgrad._C._step_is_recording()


# ---- threads and memory --------------------------------------------------------------------------


def test_concurrent_replays_from_threads_are_serialised_and_correct():
    # calls are atomic (inputs copied and the program replayed under the step's lock):
    # each thread gets the result of its own input, and a counter parameter loses no update
    counter = rgrad.zeros(1)

    def f(x):
        with rgrad.no_grad():
            counter.add_(1.0)
        return (x * 3).exp().sum()

    step = rgrad.compile_step(f, rgrad.zeros(64))
    step(rgrad.zeros(64))
    errors = []
    calls = 50

    def worker(seed):
        g = rgrad.Generator().manual_seed(seed)
        try:
            for _ in range(calls):
                x = rgrad.rand(64, generator=g)
                want = (x * 3).exp().sum()
                got = step(x)
                if bits(got) != bits(want):
                    errors.append("wrong result")
        except Exception as e:  # (reported below)
            errors.append(repr(e))

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert counter.tolist() == [1.0 + 4 * calls]


def _rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def test_replays_and_dropped_steps_do_not_leak():
    # 4 MB intermediates per replay: a leak of one per replay would show as hundreds of MB
    w = rgrad.randn(1 << 20).requires_grad_()

    def f(x):
        w.grad = None
        y = ((x * w).tanh() * x).sum()
        y.backward()
        return y

    x = rgrad.randn(1 << 20)
    for _ in range(3):
        step = rgrad.compile_step(f, x)
        for _ in range(20):
            step(x)
    del step
    gc.collect()
    before = _rss_bytes()
    for _ in range(10):
        step = rgrad.compile_step(f, x)
        for _ in range(30):
            step(x)
        del step
    gc.collect()
    growth = _rss_bytes() - before
    assert growth < 64 << 20, f"RSS grew by {growth / 1e6:.1f} MB over 10 steps x 30 replays"


def test_step_keeps_working_after_errors_and_returns_structures():
    params = make_mlp(8, sizes=(4, 3))

    def f(x):
        out = F.linear(x, params[0], params[1])
        return out, [out.sum(), None]

    step = rgrad.compile_step(f, rgrad.ones(2, 4))
    a, (s, none) = step(rgrad.ones(2, 4))
    b, (s2, _) = step(rgrad.full((2, 4), 2.0))
    assert none is None
    assert_same(b, F.linear(rgrad.full((2, 4), 2.0), params[0], params[1]).detach(), "replayed output")
    assert_same(s2, b.sum(), "replayed sum")
    with pytest.raises(TypeError, match="must return a Tensor"):
        rgrad.compile_step(lambda x: 3, rgrad.ones(1))(rgrad.ones(1))


def test_learning_rate_held_in_a_tensor_is_read_on_each_replay():
    # Python numbers are baked into the program; a tensor the step reads is not
    p_eager = make_mlp(9, sizes=(6, 3))
    p_comp = clone_params(p_eager)

    def make(params, lr):
        def step(x, y):
            loss = F.nll_loss(F.log_softmax(forward(params, x), dim=1), y)
            loss.backward()
            with rgrad.no_grad():
                for p in params:
                    p -= lr * p.grad
                    p.grad = None
            return loss

        return step

    lr_e, lr_c = rgrad.tensor(0.5), rgrad.tensor(0.5)
    data = batches(5, features=6, classes=3, seed=3)
    eager, step = make(p_eager, lr_e), rgrad.compile_step(make(p_comp, lr_c), *data[0])
    for k, (x, y) in enumerate(data):
        lr_e.fill_(0.5 / (k + 1))
        lr_c.fill_(0.5 / (k + 1))
        assert_same(step(x, y), eager(x, y), f"loss at step {k}")
        for i, (pc, pe) in enumerate(zip(p_comp, p_eager)):
            assert_same(pc, pe, f"param {i} at step {k}")
    assert step.replays == len(data) - 1


def test_recording_is_not_disturbed_by_backward_passes_on_other_threads():
    # other threads' eager work (sharing the engine's pool) is neither recorded nor
    # changed while one thread records and replays
    stop = threading.Event()
    errors = []

    def background():
        rgrad.manual_seed(0)
        w = rgrad.randn(64, 64).requires_grad_()
        x = rgrad.randn(32, 64)
        want = None
        while not stop.is_set():
            w.grad = None
            (x @ w).tanh().sum().backward()
            g = bits(w.grad)
            if want is None:
                want = g
            elif g != want:
                errors.append("background gradient changed")
                return

    t = threading.Thread(target=background)
    t.start()
    try:
        for seed in range(3):
            p_eager = make_mlp(20 + seed)
            p_comp = clone_params(p_eager)
            data = batches(4, seed=seed)
            eager = sgd_step_set_to_none(p_eager)
            step = rgrad.compile_step(sgd_step_set_to_none(p_comp), *data[0])
            for k, (x, y) in enumerate(data):
                assert_same(step(x, y), eager(x, y), f"loss at step {k}")
            for i, (pc, pe) in enumerate(zip(p_comp, p_eager)):
                assert_same(pc, pe, f"param {i}")
    finally:
        stop.set()
        t.join()
    assert errors == []


def test_results_are_fresh_tensors_also_for_inputs_and_parameters():
    # a result that is an input or a parameter comes back as a copy of its value
    w = rgrad.ones(3)

    def f(x):
        with rgrad.no_grad():
            w.add_(x)
        return x, w

    step = rgrad.compile_step(f, rgrad.zeros(3))
    step(rgrad.zeros(3))
    x = rgrad.full((3,), 2.0)
    xr, wr = step(x)
    assert xr.tolist() == [2.0] * 3 and wr.tolist() == [3.0] * 3
    assert wr is not w
    wr.add_(100.0)
    assert w.tolist() == [3.0] * 3


# a spread of ops (losses, reductions, views, in-place writes into views, products, index
# ops), each in a training step with an SGD update: replayed bit for bit
OP_STEPS = {
    "cross_entropy": lambda p, x, y: F.cross_entropy(F.linear(x, p[0], p[1]), y),
    "nll_log_softmax": lambda p, x, y: F.nll_loss(F.log_softmax(F.linear(x, p[0], p[1]), 1), y),
    "mse_sigmoid": lambda p, x, y: F.mse_loss(F.linear(x, p[0], p[1]).sigmoid(), x[:, :1].expand(4, 8)),
    # (a contiguous target of the same shape: the fused Σ(x - t)² kernel)
    "mse_fused": lambda p, x, y: F.mse_loss(F.linear(x, p[0], p[1]), x.sum(1, keepdim=True).expand(4, 8).contiguous(),
                                            reduction="sum"),
    "softmax_var": lambda p, x, y: (F.softmax(F.linear(x, p[0], p[1]), dim=1).var(dim=0) + p[1].abs().sum()).sum(),
    "cat_stack_pow": lambda p, x, y: rgrad.cat([F.linear(x, p[0]), x @ p[0].t()], dim=1).pow(2).mean()
    + rgrad.stack([p[1], p[1] * 2]).sum(),
    "views": lambda p, x, y: (p[0].t().reshape(-1)[3:20].view(17, 1) * 2).clamp(-1, 1).sum()
    + p[0][2:5, ::2].sum()
    + p[0].transpose(0, 1).contiguous().sum(),
    "where_amax_logsumexp": lambda p, x, y: rgrad.where(p[0] > 0, p[0], p[0] * 0.1).amax(dim=1).sum()
    + p[0].max()
    + p[1].logsumexp(0),
    "inplace_into_view": lambda p, x, y: (lambda h: (h[:, 0].mul_(2), h.sum())[1])(F.linear(x, p[0], p[1]).clone()),
    "bmm_tanh": lambda p, x, y: (x.unsqueeze(0).expand(3, 4, 6) @ p[0].t().unsqueeze(0)).tanh().sum(),
    "index_select_gather": lambda p, x, y: p[0].index_select(0, y).sum()
    + p[0].gather(0, y.unsqueeze(1).expand(4, 6)).pow(3).sum(),
    "cummax_cummin_logcumsumexp": lambda p, x, y: rgrad.cummax(F.linear(x, p[0], p[1]), 1).values.pow(2).sum()
    + p[0].cummin(0).values.sum()
    + rgrad.logcumsumexp(p[1], 0).sum(),
}


@pytest.mark.parametrize("name", sorted(OP_STEPS))
def test_op_spread_replays_bit_for_bit(name):
    f = OP_STEPS[name]

    def params():
        rgrad.manual_seed(0)
        return [rgrad.randn(8, 6).requires_grad_(), rgrad.randn(8).requires_grad_()]

    def make(p):
        def step(x, y):
            loss = f(p, x, y)
            loss.backward()
            with rgrad.no_grad():
                for q in p:
                    if q.grad is not None:
                        q -= 0.1 * q.grad
                    q.grad = None
            return loss

        return step

    g = rgrad.Generator().manual_seed(1)
    data = [(rgrad.randn(4, 6, generator=g), rgrad.randint(0, 8, (4,), generator=g)) for _ in range(4)]
    pe, pc = params(), params()
    eager, step = make(pe), rgrad.compile_step(make(pc), *data[0])
    for k, (x, y) in enumerate(data):
        assert_same(step(x, y), eager(x, y), f"{name}: loss at step {k}")
        for i, (u, v) in enumerate(zip(pc, pe)):
            assert_same(u, v, f"{name}: param {i} at step {k}")
    assert step.replays == len(data) - 1


def test_replay_and_eager_in_place_ops_on_other_threads_do_not_deadlock():
    # a replayed `p += 0 * q` and an eager `q += 0 * p` on another thread lock the two
    # storages in the same (address) order, so both finish
    p, q = rgrad.randn(1000), rgrad.randn(1000)
    before = (bits(p), bits(q))

    def f(x):
        with rgrad.no_grad():
            p.add_(q, alpha=0.0)
            q.add_(p, alpha=0.0)
        return x * 1.0

    step = rgrad.compile_step(f, rgrad.ones(1))
    step(rgrad.ones(1))
    done = []

    def eager():
        for _ in range(2000):
            with rgrad.no_grad():
                q.add_(p, alpha=0.0)
                p.add_(q, alpha=0.0)
        done.append(True)

    t = threading.Thread(target=eager)
    t.start()
    for _ in range(2000):
        step(rgrad.ones(1))
    t.join(timeout=60)
    assert done == [True]
    assert (bits(p), bits(q)) == before


def test_read_only_externs_are_read_once_per_replay_while_other_threads_write_them():
    # A step that writes no tensor from before the recording read-locks those tensors for
    # its whole replay: an eager writer on another thread waits between replays (no
    # deadlock), and every replay reads one value of `a` throughout, never a mix (the sum
    # below would show one). Overlaps depend on the scheduling (a few per run here, with a
    # short switch interval); the property is checked for those that happen.
    a = rgrad.full((1,), 0.25)

    def f(x):
        h = x
        for _ in range(1000):
            h = h + a
        return h

    x = rgrad.ones(1)
    expected = {}
    for v in (0.25, 0.5):
        with rgrad.no_grad():
            a.fill_(v)
        expected[tuple(bits(f(x)))] = v
    with rgrad.no_grad():
        a.fill_(0.25)
    step = rgrad.compile_step(f, x)
    step(x)
    done = []

    def writer():
        for i in range(20000):
            with rgrad.no_grad():
                a.fill_(0.5 if i % 2 == 0 else 0.25)
        done.append(True)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        t = threading.Thread(target=writer)
        t.start()
        for _ in range(300):
            out = tuple(bits(step(x)))
            assert out in expected, "a replay read two values of a tensor written meanwhile"
        t.join(timeout=60)
    finally:
        sys.setswitchinterval(interval)
    assert done == [True]


def test_big_read_only_step_and_backward_accumulating_on_the_pool_do_not_deadlock():
    # The step reads w.grad (written by nothing in the step); another thread's backward
    # passes accumulate into w.grad in place, on the pool. A replay that runs on the pool
    # must not hold w.grad's lock while it waits for a pool thread.
    w = rgrad.randn(256, 256, requires_grad=True)
    w.grad = rgrad.zeros(256, 256)
    g = w.grad
    x = rgrad.randn(256, 256)
    step = rgrad.compile_step(lambda x: (x @ g).sum(), x)
    step(x)
    done = []

    def backward():
        for _ in range(100):
            (w * 2.0).sum().backward()
        done.append(True)

    t = threading.Thread(target=backward)
    t.start()
    for _ in range(100):
        assert bool(rgrad.isfinite(step(x)))
    t.join(timeout=120)
    assert done == [True]
    assert w.grad is g  # accumulated in place throughout


def test_clamp_with_tensor_bounds_replays_its_fused_kernel():
    # clamp(x, lo, hi) with bounds of x's shape is one fused kernel (clamp_between),
    # recorded and replayed as such; broadcast bounds take the two-kernel path
    rgrad.manual_seed(3)
    w_eager = rgrad.randn(64, 32, requires_grad=True)
    w_comp = w_eager.detach().clone().requires_grad_()

    def make(w):
        def step(x, lo, hi, row):
            y = (x * w).clamp(lo, hi) + (x * w).clamp(row, None)
            loss = y.clamp(lo, hi).sum()
            loss.backward()
            return loss

        return step

    data = []
    for _ in range(4):
        x = rgrad.randn(64, 32)
        lo = rgrad.randn(64, 32) - 0.5
        data.append((x, lo, lo + rgrad.rand(64, 32), rgrad.randn(32)))
    eager, step = make(w_eager), rgrad.compile_step(make(w_comp), *data[0])
    for k, args in enumerate(data):
        assert_same(step(*args), eager(*args), f"loss at step {k}")
        assert_same(w_comp.grad, w_eager.grad, f"grad at step {k}")
    assert step.replays >= 2
    assert "clamp_between" in step.kernel_names()
