"""Random streams: rgrad's generator against torch's CPU generator, bit for bit.

Values are compared as raw bits (``numpy().view``) or with ``tolist()`` equality, never
approximately. The torch parts skip when torch is not installed; the rest (determinism,
state round trips, errors) always runs.
"""

import numpy as np
import pytest

import rgrad

SIZES = [1, 3, 15, 16, 17, 31, 32, 100, 1000, 10000]
SEEDS = [0, 1, 12345]
DTYPES = ["float32", "float64"]


def bits(t):
    a = t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)
    a = np.ascontiguousarray(a)
    if a.dtype == np.float32:
        return a.view(np.uint32).tolist()
    if a.dtype == np.float64:
        return a.view(np.uint64).tolist()
    return a.tolist()


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def pair(torch, seed):
    """The two default generators seeded alike."""
    torch.manual_seed(seed)
    rgrad.manual_seed(seed)


# ---- parity with torch ------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", SIZES)
def test_rand_randn_match_torch(torch, n, dtype):
    for seed in SEEDS:
        pair(torch, seed)
        assert bits(rgrad.rand(n, dtype=getattr(rgrad, dtype))) == bits(torch.rand(n, dtype=getattr(torch, dtype)))
        assert bits(rgrad.randn(n, dtype=getattr(rgrad, dtype))) == bits(torch.randn(n, dtype=getattr(torch, dtype)))
        # a second draw continues the same stream (and the cached normal sample)
        assert bits(rgrad.randn(n, dtype=getattr(rgrad, dtype))) == bits(torch.randn(n, dtype=getattr(torch, dtype)))
        assert bits(rgrad.rand(2, 3)) == bits(torch.rand(2, 3))


@pytest.mark.parametrize("shape", [(4, 5), (2, 3, 7), (3, 1, 6), (0, 3)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_multi_dim_factories_match_torch(torch, shape, dtype):
    pair(torch, 7)
    td, rd = getattr(torch, dtype), getattr(rgrad, dtype)
    assert bits(rgrad.randn(*shape, dtype=rd)) == bits(torch.randn(*shape, dtype=td))
    assert bits(rgrad.rand(shape, dtype=rd)) == bits(torch.rand(shape, dtype=td))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", SIZES)
def test_normal_uniform_in_place_match_torch(torch, n, dtype):
    td, rd = getattr(torch, dtype), getattr(rgrad, dtype)
    pair(torch, 3)
    for mean, std in [(0.0, 1.0), (0.5, 3.0), (-2.0, 0.1)]:
        assert bits(rgrad.zeros(n, dtype=rd).normal_(mean, std)) == bits(torch.zeros(n, dtype=td).normal_(mean, std))
    for lo, hi in [(0.0, 1.0), (-2.5, 7.25), (3.0, 3.5)]:
        assert bits(rgrad.zeros(n, dtype=rd).uniform_(lo, hi)) == bits(torch.zeros(n, dtype=td).uniform_(lo, hi))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "make",
    [
        lambda m, d: m.zeros(6, 8, dtype=d).t(),  # transposed: memory order differs from logical order
        lambda m, d: m.zeros(10, 40, dtype=d)[:, ::2],  # strided rows, 200 elements, not contiguous
        lambda m, d: m.zeros(4, 5, 6, dtype=d).permute(2, 0, 1),
        lambda m, d: m.zeros(40, dtype=d)[::3],
        lambda m, d: m.zeros(20, 20, dtype=d)[2:7],  # a contiguous slice of 100 elements (vectorised path)
    ],
)
def test_in_place_on_views_match_torch(torch, make, dtype):
    td, rd = getattr(torch, dtype), getattr(rgrad, dtype)
    pair(torch, 11)
    r, t = make(rgrad, rd), make(torch, td)
    assert bits(r.normal_(1.0, 2.0)) == bits(t.normal_(1.0, 2.0))
    r, t = make(rgrad, rd), make(torch, td)
    assert bits(r.uniform_(-1.0, 1.0)) == bits(t.uniform_(-1.0, 1.0))
    r, t = make(rgrad, rd), make(torch, td)
    assert bits(r.bernoulli_(0.3)) == bits(t.bernoulli_(0.3))
    # the base sees the values where the view put them
    rb, tb = rgrad.zeros(6, 8, dtype=rd), torch.zeros(6, 8, dtype=td)
    rb.t().normal_()
    tb.t().normal_()
    assert bits(rb) == bits(tb)


SAMPLERS = [
    ("exponential_", (1.0,)), ("exponential_", (2.5,)), ("exponential_", (float("inf"),)),
    ("cauchy_", ()), ("cauchy_", (0.5, 2.5)),
    ("geometric_", (0.3,)), ("geometric_", (0.999,)),
    ("log_normal_", ()), ("log_normal_", (0.0, 0.25)),
    ("random_", ()),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "make",
    [
        lambda m, d: m.zeros(1, dtype=d),
        lambda m, d: m.zeros(37, dtype=d),
        lambda m, d: m.zeros(6, 8, dtype=d).t(),  # drawn in memory order, as TensorIterator does
        lambda m, d: m.zeros(10, 40, dtype=d)[:, ::2],
    ],
)
@pytest.mark.parametrize("name,args", SAMPLERS, ids=[f"{n}{a}" for n, a in SAMPLERS])
def test_samplers_match_torch(torch, make, dtype, name, args):
    """exponential_, cauchy_, geometric_, log_normal_ and random_() draw torch's values
    bit for bit, and leave the stream (the cached normal sample included) where torch's
    does."""
    td, rd = getattr(torch, dtype), getattr(rgrad, dtype)
    for seed in SEEDS:
        pair(torch, seed)
        r, t = make(rgrad, rd), make(torch, td)
        assert bits(getattr(r, name)(*args)) == bits(getattr(t, name)(*args))
        assert bits(rgrad.randn(3, dtype=rd)) == bits(torch.randn(3, dtype=td))


@pytest.mark.parametrize("name,args", [("geometric_", (0.4,)), ("random_", ())])
@pytest.mark.parametrize("dtype", ["int64", "bool"])
def test_integer_samplers_match_torch(torch, name, args, dtype):
    if (name, dtype) == ("geometric_", "bool"):
        return  # an error, checked with the others
    pair(torch, 4)
    r, t = rgrad.zeros(9, dtype=getattr(rgrad, dtype)), torch.zeros(9, dtype=getattr(torch, dtype))
    assert getattr(r, name)(*args).tolist() == getattr(t, name)(*args).tolist()


@pytest.mark.parametrize("dtype", DTYPES)
def test_like_functions_match_torch(torch, dtype):
    td, rd = getattr(torch, dtype), getattr(rgrad, dtype)
    for shape in [(5,), (17,), (4, 8)]:
        pair(torch, 5)
        r, t = rgrad.zeros(shape, dtype=rd), torch.zeros(shape, dtype=td)
        assert bits(rgrad.rand_like(r)) == bits(torch.rand_like(t))
        assert bits(rgrad.randn_like(r)) == bits(torch.randn_like(t))
        assert bits(rgrad.randint_like(r, 10)) == bits(torch.randint_like(t, 10))
        assert bits(rgrad.randint_like(r, -3, 3)) == bits(torch.randint_like(t, -3, 3))
    # a transposed input: empty_like keeps its strides, so normal_ takes the scalar path
    pair(torch, 5)
    r, t = rgrad.zeros(8, 6, dtype=rd).t(), torch.zeros(8, 6, dtype=td).t()
    a, b = rgrad.randn_like(r), torch.randn_like(t)
    assert a.stride() == b.stride()
    assert bits(a) == bits(b)
    assert bits(rgrad.rand_like(r)) == bits(torch.rand_like(t))
    # a non-dense input: the output is dense, its dims in the input's stride order
    for perm in [(1, 0, 2), (2, 0, 1), (2, 1, 0)]:
        pair(torch, 6)
        r = rgrad.zeros(4, 6, 10, dtype=rd).permute(*perm)[..., ::2]
        t = torch.zeros(4, 6, 10, dtype=td).permute(*perm)[..., ::2]
        a, b = rgrad.randn_like(r), torch.randn_like(t)
        assert a.stride() == b.stride()
        assert bits(a) == bits(b)
        assert bits(rgrad.randint_like(r, 100)) == bits(torch.randint_like(t, 100))


@pytest.mark.parametrize("size", [(1,), (20,), (3, 4), (1000,)])
def test_randint_matches_torch(torch, size):
    for seed in SEEDS:
        pair(torch, seed)
        assert rgrad.randint(10, size).tolist() == torch.randint(10, size).tolist()
        assert rgrad.randint(-5, 7, size).tolist() == torch.randint(-5, 7, size).tolist()
        # ranges of 2^32 and more draw 64 bits
        assert rgrad.randint(0, 2**40, size).tolist() == torch.randint(0, 2**40, size).tolist()
        assert rgrad.randint(-(2**63), 2**63 - 1, size).tolist() == torch.randint(-(2**63), 2**63 - 1, size).tolist()
        assert bits(rgrad.randint(0, 100, size, dtype=rgrad.float32)) == bits(
            torch.randint(0, 100, size, dtype=torch.float32)
        )
        assert bits(rgrad.randint(3, 9, size=size, dtype=rgrad.float64)) == bits(
            torch.randint(3, 9, size=size, dtype=torch.float64)
        )


def test_randint_float_bounds_beyond_mantissa_match_torch(torch):
    # ATen moves bounds a float dtype cannot represent inwards (update_from / update_to);
    # torch also warns about the range, which rgrad does not.
    import warnings

    for lo, hi, dt in [(-3, 2**33, "float32"), (0, 2**60, "float64"), (-(2**40), 2**40, "float32")]:
        pair(torch, 1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = torch.randint(lo, hi, (50,), dtype=getattr(torch, dt))
        assert bits(rgrad.randint(lo, hi, (50,), dtype=getattr(rgrad, dt))) == bits(want)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 16, 17, 100, 10000])
def test_randperm_matches_torch(torch, n):
    for seed in SEEDS:
        pair(torch, seed)
        assert rgrad.randperm(n).tolist() == torch.randperm(n).tolist()
        assert rgrad.randperm(n, dtype=rgrad.float32).tolist() == torch.randperm(n, dtype=torch.float32).tolist()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 3, 16, 17, 100, 1000])
def test_bernoulli_matches_torch(torch, n, dtype):
    td, rd = getattr(torch, dtype), getattr(rgrad, dtype)
    pair(torch, 9)
    p_t = torch.rand(n, dtype=td)
    p_r = rgrad.rand(n, dtype=rd)
    assert bits(p_r) == bits(p_t)
    assert bits(rgrad.bernoulli(p_r)) == bits(torch.bernoulli(p_t))
    assert bits(p_r.bernoulli()) == bits(p_t.bernoulli())
    assert bits(rgrad.bernoulli(p_r, 0.25)) == bits(torch.bernoulli(p_t, 0.25))
    assert bits(p_r.bernoulli(0.7)) == bits(p_t.bernoulli(0.7))
    assert bits(rgrad.zeros(n, dtype=rd).bernoulli_()) == bits(torch.zeros(n, dtype=td).bernoulli_())
    assert bits(rgrad.zeros(n, dtype=rd).bernoulli_(p_r)) == bits(torch.zeros(n, dtype=td).bernoulli_(p_t))
    assert rgrad.zeros(n, dtype=rgrad.int64).bernoulli_(p_r).tolist() == (
        torch.zeros(n, dtype=torch.int64).bernoulli_(p_t).tolist()
    )
    # p broadcast over rows
    assert bits(rgrad.zeros(4, n, dtype=rd).bernoulli_(p_r)) == bits(torch.zeros(4, n, dtype=td).bernoulli_(p_t))


@pytest.mark.parametrize("dtype", DTYPES)
def test_multinomial_matches_torch(torch, dtype):
    td, rd = getattr(torch, dtype), getattr(rgrad, dtype)
    for seed in SEEDS:
        pair(torch, seed)
        w_t = torch.rand(5, 12, dtype=td)
        w_r = rgrad.rand(5, 12, dtype=rd)
        for k, repl in [(1, False), (1, True), (4, False), (12, False), (7, True), (50, True)]:
            assert rgrad.multinomial(w_r, k, repl).tolist() == torch.multinomial(w_t, k, repl).tolist()
            assert w_r[0].multinomial(k, replacement=repl).tolist() == w_t[0].multinomial(k, replacement=repl).tolist()
        p_t = torch.tensor([0.1, 0.0, 0.6, 0.3], dtype=td)
        p_r = rgrad.tensor([0.1, 0.0, 0.6, 0.3], dtype=rd)
        assert rgrad.multinomial(p_r, 1000, True).tolist() == torch.multinomial(p_t, 1000, True).tolist()


def test_uniform_never_returns_to(torch):
    # x * (to - from) + from can round up to `to`; torch returns `from` then, as we do
    for dt, top in [("float64", float(np.nextafter(1.0, 2.0))), ("float32", float(np.nextafter(np.float32(1), 2)))]:
        pair(torch, 1)
        r = rgrad.zeros(100, dtype=getattr(rgrad, dt)).uniform_(1.0, top)
        assert set(r.tolist()) == {1.0}
        assert bits(r) == bits(torch.zeros(100, dtype=getattr(torch, dt)).uniform_(1.0, top))
    pair(torch, 3189400895550992775)
    lo, hi = 910510.8583771691, 974536.6000446855
    assert bits(rgrad.empty(65537).normal_(1.0, 2.0)) == bits(torch.empty(65537).normal_(1.0, 2.0))
    assert bits(rgrad.empty(65537).uniform_(lo, hi)) == bits(torch.empty(65537).uniform_(lo, hi))


@pytest.mark.parametrize("k", [2, 3, 5, 8, 20, 33, 64])
def test_multinomial_ties_follow_torch_topk(torch, k):
    # Without replacement, zero-probability categories (equal keys p/q = 0) come out in the
    # order ATen's topk (libstdc++'s nth_element/sort/partial_sort) leaves them.
    for seed in range(6):
        pair(torch, seed)
        p_t = torch.rand(4, 200) * (torch.rand(4, 200) > 0.8)  # k * 64 <= 200: partial_sort
        p_t[:, 0] += 0.1
        p_r = rgrad.tensor(p_t.tolist())
        pair(torch, seed + 100)
        assert rgrad.multinomial(p_r, k).tolist() == torch.multinomial(p_t, k).tolist()
        assert rgrad.multinomial(p_r[0], k).tolist() == torch.multinomial(p_t[0], k).tolist()
        assert rgrad.multinomial(p_r[:, :k], k).tolist() == torch.multinomial(p_t[:, :k], k).tolist()


def test_strided_probabilities_match_torch(torch):
    pair(torch, 21)
    w_t, w_r = torch.rand(12, 5), rgrad.rand(12, 5)
    assert bits(w_r) == bits(w_t)
    # multinomial on a transposed matrix: the exponential draws follow its memory order
    assert rgrad.multinomial(w_r.t(), 3).tolist() == torch.multinomial(w_t.t(), 3).tolist()
    assert rgrad.multinomial(w_r.t(), 6, True).tolist() == torch.multinomial(w_t.t(), 6, True).tolist()
    # bernoulli_ into a transposed output with broadcast probabilities
    p_t, p_r = torch.rand(12, 1, dtype=torch.float64), rgrad.rand(12, 1, dtype=rgrad.float64)
    assert bits(rgrad.zeros(5, 12).t().bernoulli_(p_r)) == bits(torch.zeros(5, 12).t().bernoulli_(p_t))
    assert bits(rgrad.zeros(12, 5).bernoulli_(p_r.t().t())) == bits(torch.zeros(12, 5).bernoulli_(p_t))
    assert rgrad.zeros(12, 5, dtype=rgrad.bool).bernoulli_(0.5).tolist() == (
        torch.zeros(12, 5, dtype=torch.bool).bernoulli_(0.5).tolist()
    )


def test_random_in_place_matches_torch(torch):
    pair(torch, 8)
    for make in [lambda m, d: m.zeros(30, dtype=d), lambda m, d: m.zeros(6, 5, dtype=d).t()]:
        assert make(rgrad, rgrad.int64).random_(-4, 9).tolist() == make(torch, torch.int64).random_(-4, 9).tolist()
        assert bits(make(rgrad, rgrad.float32).random_(100)) == bits(make(torch, torch.float32).random_(100))
        assert make(rgrad, rgrad.bool).random_(0, 2).tolist() == make(torch, torch.bool).random_(0, 2).tolist()


@pytest.mark.parametrize("dtype", DTYPES)
def test_normal_function_matches_torch(torch, dtype):
    td, rd = getattr(torch, dtype), getattr(rgrad, dtype)
    pair(torch, 4)
    assert bits(rgrad.normal(2.0, 3.0, (40,), dtype=rd)) == bits(torch.normal(2.0, 3.0, (40,), dtype=td))
    assert bits(rgrad.normal(2.0, 3.0, size=(5,), dtype=rd)) == bits(torch.normal(2.0, 3.0, size=(5,), dtype=td))
    m_t, m_r = torch.arange(20, dtype=td), rgrad.arange(20, dtype=rd)
    s_t = torch.linspace(0.1, 2.0, 20, dtype=td)
    s_r = rgrad.tensor(s_t.tolist(), dtype=rd)
    assert bits(rgrad.normal(m_r, s_r)) == bits(torch.normal(m_t, s_t))
    assert bits(rgrad.normal(m_r, 0.5)) == bits(torch.normal(m_t, 0.5))
    assert bits(rgrad.normal(1.5, s_r)) == bits(torch.normal(1.5, s_t))
    assert bits(rgrad.normal(m_r[:5], s_r[:5])) == bits(torch.normal(m_t[:5], s_t[:5]))


def test_explicit_generators_match_torch(torch):
    for seed in SEEDS:
        gt = torch.Generator().manual_seed(seed)
        gr = rgrad.Generator().manual_seed(seed)
        torch.manual_seed(99)
        rgrad.manual_seed(99)
        assert bits(rgrad.randn(20, generator=gr)) == bits(torch.randn(20, generator=gt))
        assert bits(rgrad.rand(3, generator=gr)) == bits(torch.rand(3, generator=gt))
        assert bits(rgrad.randn(3, dtype=rgrad.float64, generator=gr)) == bits(
            torch.randn(3, dtype=torch.float64, generator=gt)
        )
        assert rgrad.randint(0, 50, (9,), generator=gr).tolist() == torch.randint(0, 50, (9,), generator=gt).tolist()
        assert rgrad.randperm(30, generator=gr).tolist() == torch.randperm(30, generator=gt).tolist()
        assert bits(rgrad.zeros(17).normal_(generator=gr)) == bits(torch.zeros(17).normal_(generator=gt))
        assert bits(rgrad.zeros(5).uniform_(2, 3, generator=gr)) == bits(torch.zeros(5).uniform_(2, 3, generator=gt))
        assert bits(rgrad.zeros(9).bernoulli_(0.5, generator=gr)) == bits(torch.zeros(9).bernoulli_(0.5, generator=gt))
        p_r, p_t = rgrad.full((9,), 0.4), torch.full((9,), 0.4)
        assert bits(rgrad.bernoulli(p_r, generator=gr)) == bits(torch.bernoulli(p_t, generator=gt))
        assert rgrad.multinomial(p_r, 3, generator=gr).tolist() == torch.multinomial(p_t, 3, generator=gt).tolist()
        assert bits(rgrad.normal(0.0, 2.0, (4,), generator=gr)) == bits(torch.normal(0.0, 2.0, (4,), generator=gt))
        assert bits(rgrad.rand_like(p_r, generator=gr)) == bits(torch.rand_like(p_t, generator=gt))
        # the default generators were not touched
        assert bits(rgrad.rand(4)) == bits(torch.rand(4))
        assert gr.get_state().tolist() == gt.get_state().tolist()


def test_state_bytes_equal_torch(torch):
    pair(torch, 2024)
    assert rgrad.get_rng_state().tolist() == torch.get_rng_state().tolist()
    assert rgrad.initial_seed() == torch.initial_seed() == 2024
    # mid-stream, with a cached double normal sample (randn of 3 leaves one)
    rgrad.randn(3)
    torch.randn(3)
    rgrad.rand(700)
    torch.rand(700)
    state = torch.get_rng_state()
    assert len(state) == 5056
    assert rgrad.get_rng_state().tolist() == state.tolist()
    rgrad.randn(1, dtype=rgrad.float64)
    torch.randn(1, dtype=torch.float64)
    assert rgrad.get_rng_state().tolist() == torch.get_rng_state().tolist()
    # torch's state bytes load into rgrad and continue torch's stream
    rgrad.manual_seed(0)
    rgrad.set_rng_state(rgrad.tensor(state.tolist()))
    torch.set_rng_state(state)
    assert bits(rgrad.randn(5)) == bits(torch.randn(5))
    rgrad.set_rng_state(bytes(state.numpy().tobytes()))
    torch.set_rng_state(state)
    assert bits(rgrad.randn(40)) == bits(torch.randn(40))
    # and rgrad's load into torch
    rs = rgrad.get_rng_state()
    torch.set_rng_state(torch.tensor(rs.tolist(), dtype=torch.uint8))
    assert bits(rgrad.rand(10, dtype=rgrad.float64)) == bits(torch.rand(10, dtype=torch.float64))
    # seeds beyond 32 bits and negative seeds
    for s in [2**40 + 3, -1, 2**64 - 1]:
        assert rgrad.manual_seed(s).initial_seed() == torch.manual_seed(s).initial_seed()
        assert rgrad.get_rng_state().tolist() == torch.get_rng_state().tolist()
        assert bits(rgrad.randn(20)) == bits(torch.randn(20))


def test_fresh_generator_seed_matches_torch(torch):
    assert rgrad.Generator().initial_seed() == torch.Generator().initial_seed() == 67280421310721
    assert rgrad.Generator().get_state().tolist() == torch.Generator().get_state().tolist()


ERRORS = [
    ("randperm(-1)", RuntimeError, "Trying to create tensor with negative dimension -1: [-1]"),
    ("randint(5, 5, (3,))", RuntimeError, "random_ expects 'from' to be less than 'to', but got from=5 >= to=5"),
    ("empty(3).uniform_(3, 2)", RuntimeError, "uniform_ expects to return a [from, to) range, but found from=3 > to=2"),
    ("empty(3, dtype=M.int64).uniform_()", NotImplementedError, "\"check_uniform_bounds\" not implemented for 'Long'"),
    ("empty(3).normal_(0, -1)", RuntimeError, "normal expects std >= 0.0, but found std -1"),
    ("empty(3, dtype=M.int64).normal_()", NotImplementedError, "\"normal_kernel_cpu\" not implemented for 'Long'"),
    ("empty(3).bernoulli_(1.5)", RuntimeError, "bernoulli_ expects p to be in [0, 1], but got p=1.5"),
    ("bernoulli(M.tensor([1.5]))", RuntimeError, "Expected p_in >= 0 && p_in <= 1 to be true, but got false."),
    ("bernoulli(M.tensor([1, 0]))", NotImplementedError, "\"bernoulli_tensor_cpu_p_\" not implemented for 'Long'"),
    ("multinomial(M.tensor([0.5, -0.1]), 1)", RuntimeError,
     "probability tensor contains either `inf`, `nan` or element < 0"),
    ("multinomial(M.tensor([0.5, -0.1]), 2, True)", RuntimeError,
     "invalid multinomial distribution (encountering probability entry < 0)"),
    ("multinomial(M.tensor([0.5, 0.5]), 3)", RuntimeError,
     "cannot sample n_sample > prob_dist.size(-1) samples without replacement"),
    ("multinomial(M.tensor([0.0, 0.0]), 1)", RuntimeError,
     "invalid multinomial distribution (sum of probabilities <= 0)"),
    ("multinomial(M.tensor([0.0, 0.0]), 2, True)", RuntimeError,
     "invalid multinomial distribution (sum of probabilities <= 0)"),
    ("multinomial(M.tensor([[[0.5]]]), 1)", RuntimeError, "prob_dist must be 1 or 2 dim"),
    ("multinomial(M.tensor([1, 2]), 1)", RuntimeError,
     "multinomial only supports floating-point dtypes for input, got: Long"),
    ("multinomial(M.tensor([0.5, 0.5]), 0)", RuntimeError, "cannot sample n_sample <= 0 samples"),
    ("multinomial(M.tensor([float('inf'), 0.5]), 2, True)", RuntimeError,
     "invalid multinomial distribution (encountering probability entry = infinity or NaN)"),
    ("multinomial(M.tensor([float('nan'), 0.5]), 2, True)", RuntimeError,
     "invalid multinomial distribution (encountering probability entry < 0)"),
    ("normal(0., -1., (3,))", RuntimeError, "normal expects std >= 0.0, but found std -1"),
    ("normal(M.zeros(3), -1.)", RuntimeError, "normal expects std >= 0.0, but found std -1"),
    ("normal(M.zeros(3), M.tensor([-1., 1, 1]))", RuntimeError, "normal expects all elements of std >= 0.0"),
    ("manual_seed(2**64)", ValueError, "Overflow when unpacking long long"),
    ("set_rng_state(M.zeros(3, dtype=M.int64))", RuntimeError,
     "Expected a CPUGeneratorImplState of size 5056 but found the input RNG state size to be 3"),
    ("set_rng_state(M.zeros(5056))", TypeError, "RNG state must be a torch.ByteTensor"),
    ("set_rng_state([1, 2])", TypeError, "expected a torch.ByteTensor, but got list"),
    ("randint(3, (2,), dtype=M.bool)", RuntimeError, "to - 1 is out of bounds for bool"),
    ("empty(2).exponential_(0.)", RuntimeError, "exponential_ expects lambda > 0.0, but found lambda=0"),
    ("empty(2).exponential_(float('nan'))", RuntimeError, "exponential_ expects lambda > 0.0, but found lambda=nan"),
    ("empty(2, dtype=M.int64).exponential_()", RuntimeError,
     "Exponential distribution is a continuous probability distribution. dtype must be a floating point but you "
     "specified Long"),
    ("empty(2, dtype=M.bool).exponential_()", RuntimeError,
     "Exponential distribution is a continuous probability distribution. dtype must be a floating point but you "
     "specified Bool"),
    ("empty(2).cauchy_(0, -1)", RuntimeError, "cauchy_ expects sigma > 0.0, but found sigma=-1"),
    ("empty(2, dtype=M.int64).cauchy_()", RuntimeError,
     "Cauchy distribution is a continuous probability distribution. dtype must be a floating point but you "
     "specified long int"),
    ("empty(2, dtype=M.bool).cauchy_()", RuntimeError,
     "Cauchy distribution is a continuous probability distribution. dtype must be a floating point but you "
     "specified bool"),
    ("empty(2).geometric_(1.0)", RuntimeError, "geometric_ expects p to be in (0, 1), but got p=1"),
    ("empty(2).geometric_(0.0)", RuntimeError, "geometric_ expects p to be in (0, 1), but got p=0"),
    ("empty(2, dtype=M.bool).geometric_(0.5)", NotImplementedError, "\"geometric_cpu\" not implemented for 'Bool'"),
    ("empty(2).log_normal_(0, 0)", RuntimeError, "log_normal_ expects std > 0.0, but found std=0"),
    ("empty(2, dtype=M.int64).log_normal_()", NotImplementedError, "\"log_normal_cpu\" not implemented for 'Long'"),
    ("empty(2, requires_grad=True).exponential_()", RuntimeError,
     "a leaf Variable that requires grad is being used in an in-place operation."),
]


@pytest.mark.parametrize("expr,exc,msg", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors(expr, exc, msg):
    with pytest.raises(exc) as info:
        eval("M." + expr, {"M": rgrad})
    assert str(info.value).startswith(msg)


@pytest.mark.parametrize("expr,exc,msg", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_match_torch(torch, expr, exc, msg):
    if "set_rng_state(M.zeros(3, dtype=M.int64))" in expr:
        expr = "set_rng_state(M.zeros(3, dtype=M.uint8))"
    state = torch.get_rng_state()
    try:
        with pytest.raises(exc) as info:
            eval("M." + expr, {"M": torch})
        assert str(info.value).startswith(msg)
    finally:
        torch.set_rng_state(state)


# ---- without torch ----------------------------------------------------------------------------


def test_mt19937_reference_values():
    # torch.manual_seed(0); torch.rand(2): mt19937(0)'s first outputs, 24 bits each
    rgrad.manual_seed(0)
    assert rgrad.rand(2).tolist() == [0.49625658988952637, 0.7682217955589294]
    rgrad.manual_seed(0)
    assert rgrad.rand(1, dtype=rgrad.float64).tolist() == [0.9700530018065531]


def test_manual_seed_is_deterministic():
    for f in [
        lambda: rgrad.randn(100),
        lambda: rgrad.randn(7, dtype=rgrad.float64),
        lambda: rgrad.rand(3, 4),
        lambda: rgrad.randint(0, 1000, (50,)),
        lambda: rgrad.randperm(64),
        lambda: rgrad.multinomial(rgrad.ones(10), 5),
        lambda: rgrad.zeros(30).bernoulli_(0.5),
    ]:
        rgrad.manual_seed(123)
        a = bits(f())
        rgrad.manual_seed(123)
        assert bits(f()) == a
        assert bits(f()) != a or len(a) <= 1


def test_manual_seed_returns_default_generator():
    g = rgrad.manual_seed(1)
    assert g is rgrad.default_generator
    assert isinstance(g, rgrad.Generator)
    assert rgrad.initial_seed() == 1
    assert rgrad.manual_seed(-1).initial_seed() == 2**64 - 1


def test_seed_reseeds_non_deterministically():
    s = rgrad.seed()
    assert 0 <= s < 2**64
    assert rgrad.initial_seed() == s
    g = rgrad.Generator()
    t = g.seed()
    assert g.initial_seed() == t


def test_state_round_trip_and_cached_normal():
    rgrad.manual_seed(5)
    rgrad.randn(3)  # leaves a cached second Box-Muller sample
    st = rgrad.get_rng_state()
    assert st.shape == (5056,)
    a = bits(rgrad.randn(5))
    rgrad.set_rng_state(st)
    assert bits(rgrad.randn(5)) == a
    g = rgrad.Generator()
    assert g.set_state(st) is g
    assert bits(rgrad.randn(5, generator=g)) == a


def test_state_bytes_are_the_state_tensors_bytes():
    """random._rng_state_bytes (what checkpoint and fork_rng keep) is get_rng_state()'s
    values as bytes, with a cached normal sample too, and set_rng_state takes it back."""
    rgrad.manual_seed(11)
    rgrad.randn(3)
    kept = rgrad.random._rng_state_bytes()
    assert isinstance(kept, bytes)
    assert kept == bytes(rgrad.get_rng_state().tolist())
    a = bits(rgrad.randn(7))
    rgrad.set_rng_state(kept)
    assert bits(rgrad.randn(7)) == a


def test_generators_are_independent():
    g1 = rgrad.Generator().manual_seed(3)
    g2 = rgrad.Generator().manual_seed(3)
    a = bits(rgrad.rand(10, generator=g1))
    rgrad.rand(10)
    assert bits(rgrad.rand(10, generator=g2)) == a
    assert g1.device.type == "cpu"


def test_in_place_records_no_history_and_bumps_version():
    x = rgrad.zeros(5)
    v = x._version
    x.normal_()
    assert x._version > v
    leaf = rgrad.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        leaf.uniform_()
    with rgrad.no_grad():
        leaf.uniform_()


def test_each_op_draws_under_one_lock():
    # Threads sharing a generator each get one whole block of the serial stream: an op
    # never interleaves its draws with another op's (large sizes release the GIL).
    import threading

    n, k = 40000, 4
    g = rgrad.Generator().manual_seed(17)
    serial = [bits(rgrad.rand(n, generator=g)) for _ in range(k)]
    g.manual_seed(17)
    out = [None] * k

    def work(i):
        out[i] = bits(rgrad.rand(n, generator=g))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(k)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(out) == sorted(serial)
