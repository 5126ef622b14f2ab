"""What a machine without a GPU can check of the CUDA surface: rgrad.cuda's answers, the
errors of every CUDA request, rgrad.device, and the device API of CPU tensors.

Each check runs on rgrad and, where torch is importable, compares with torch (torch 2.15,
a CUDA build, which on a machine without a driver raises "Found no NVIDIA driver ...").
Printed text says ``rgrad`` where torch's says ``torch``/``PyTorch``. The whole module
skips where CUDA is available (tests_gpu/ covers that case).
"""

import collections
import pickle

import pytest

import rgrad

pytestmark = pytest.mark.skipif(rgrad.cuda.is_available(), reason="a CUDA device is present (see tests_gpu/)")

NO_DRIVER = (
    "Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a driver "
    "from http://www.nvidia.com/Download/index.aspx"
)


def _why_not() -> str:
    """torch's reason CUDA cannot be set up here: no driver (the usual CI machine), or a
    driver that sees no GPU."""
    try:
        rgrad._C._cuda_init()
    except RuntimeError as e:
        return str(e)
    return ""


WHY = "" if rgrad.cuda.is_available() else _why_not()


@pytest.fixture(scope="module")
def torch():
    t = pytest.importorskip("torch")
    if t.cuda.is_available():
        pytest.skip("torch sees a CUDA device")
    return t


def _as_rgrad(text: str) -> str:
    return text.replace("PyTorch", "rgrad").replace("torch.", "rgrad.")


def outcome(fn, mod):
    """('ok', value) or ('raise', exception) of ``fn(mod)``."""
    try:
        return "ok", fn(mod)
    except Exception as e:  # noqa: BLE001  (the exception is the result)
        return "raise", e


def assert_same_error(fn, torch):
    """``fn`` raises on both libraries: the same type and, in rgrad's words, the same message.
    Where torch raises a class of its own (torch.AcceleratorError), rgrad raises its class of
    that name, a RuntimeError subclass as torch's is."""
    kind, theirs = outcome(fn, torch)
    assert kind == "raise", f"torch did not raise: {theirs!r}"
    with pytest.raises(Exception) as info:
        fn(rgrad)
    ours = info.value
    if type(theirs).__module__ == "builtins":
        assert type(ours) is type(theirs), (type(ours), type(theirs), str(ours))
    else:
        assert type(ours).__name__ == type(theirs).__name__
        assert isinstance(ours, RuntimeError) and isinstance(theirs, RuntimeError)
    assert str(ours) == _as_rgrad(str(theirs))
    return ours


# ---- 1. the queries that never raise ----------------------------------------------------------

QUERIES = {
    "is_available": (lambda m: m.cuda.is_available(), False),
    "device_count": (lambda m: m.cuda.device_count(), 0),
    "is_initialized": (lambda m: m.cuda.is_initialized(), False),
    "memory_allocated": (lambda m: m.cuda.memory_allocated(), 0),
    "memory_allocated(0)": (lambda m: m.cuda.memory_allocated(0), 0),
    "max_memory_allocated": (lambda m: m.cuda.max_memory_allocated(), 0),
    "memory_reserved": (lambda m: m.cuda.memory_reserved("cuda"), 0),
    "max_memory_reserved": (lambda m: m.cuda.max_memory_reserved(), 0),
    "empty_cache": (lambda m: m.cuda.empty_cache(), None),
    "manual_seed": (lambda m: m.cuda.manual_seed(0), None),
    "manual_seed_all": (lambda m: m.cuda.manual_seed_all(0), None),
    "set_device(-1)": (lambda m: m.cuda.set_device(-1), None),  # a negative index: nothing
    "Event()": (lambda m: type(m.cuda.Event()).__name__, "Event"),  # made lazily: no device yet
    "Event().query()": (lambda m: m.cuda.Event().query(), True),
    "Event().synchronize()": (lambda m: m.cuda.Event().synchronize(), None),
    "Event().cuda_event": (lambda m: m.cuda.Event().cuda_event, 0),
    "repr(Event())": (lambda m: repr(m.cuda.Event()).replace("torch", "rgrad"), "<rgrad.cuda.Event uninitialized>"),
    "allow_tf32": (lambda m: m.backends.cuda.matmul.allow_tf32, False),
}


@pytest.mark.parametrize("name", list(QUERIES))
def test_query(name):
    fn, expected = QUERIES[name]
    assert fn(rgrad) == expected
    assert rgrad.cuda.is_initialized() is False  # none of them sets CUDA up


@pytest.mark.parametrize("name", list(QUERIES))
def test_query_matches_torch(name, torch):
    fn, expected = QUERIES[name]
    assert fn(torch) == expected


@pytest.mark.parametrize("mod", ["rgrad", "torch"])
def test_memory_stats_is_an_empty_ordered_dict(mod, request):
    m = rgrad if mod == "rgrad" else request.getfixturevalue("torch")
    for args in [(), (0,), ("cuda:0",)]:
        stats = m.cuda.memory_stats(*args)
        assert type(stats) is collections.OrderedDict and stats == {}


def test_the_reason_is_torchs():
    assert WHY in (NO_DRIVER, "No CUDA GPUs are available")


def test_device_context_with_a_negative_index_does_nothing():
    with rgrad.cuda.device(-1):
        pass


# ---- 2. every CUDA request raises torch's error -------------------------------------------------


def _enter_device(m):
    with m.cuda.device(0):
        pass


CUDA_REQUESTS = {
    "zeros": lambda m: m.zeros(1, device="cuda"),
    "zeros cuda:1": lambda m: m.zeros(1, device="cuda:1"),
    "zeros device(cuda)": lambda m: m.zeros(1, device=m.device("cuda")),
    "zeros device=0": lambda m: m.zeros(1, device=0),
    "ones": lambda m: m.ones(2, 3, device="cuda"),
    "full": lambda m: m.full((2,), 7.0, device="cuda"),
    "arange": lambda m: m.arange(5, device="cuda"),
    "linspace": lambda m: m.linspace(0, 1, 5, device="cuda"),
    "eye": lambda m: m.eye(3, device="cuda"),
    "empty": lambda m: m.empty(2, device="cuda"),
    "rand": lambda m: m.rand(2, device="cuda"),
    "randn": lambda m: m.randn(2, device="cuda"),
    "randint": lambda m: m.randint(0, 5, (2,), device="cuda"),
    "tensor": lambda m: m.tensor([1.0, 2.0], device="cuda"),
    "x.cuda()": lambda m: m.ones(2).cuda(),
    "x.cuda(0)": lambda m: m.ones(2).cuda(0),
    "x.to('cuda')": lambda m: m.ones(2).to("cuda"),
    "x.to('cuda:0')": lambda m: m.ones(2).to("cuda:0"),
    "x.to(device('cuda', 0))": lambda m: m.ones(2).to(m.device("cuda", 0)),
    "x.to(device='cuda')": lambda m: m.ones(2).to(device="cuda"),
    "x.to('cuda', float64)": lambda m: m.ones(2).to("cuda", m.float64),
    "x.to(0)": lambda m: m.ones(2).to(0),
    "zeros_like": lambda m: m.zeros_like(m.ones(2), device="cuda"),
    "ones_like": lambda m: m.ones_like(m.ones(2), device="cuda"),
    "full_like": lambda m: m.full_like(m.ones(2), 3.0, device="cuda"),
    "rand_like": lambda m: m.rand_like(m.ones(2), device="cuda"),
    "randn_like": lambda m: m.randn_like(m.ones(2), device="cuda"),
    "randint_like": lambda m: m.randint_like(m.ones(2), 5, device="cuda"),
    "new_zeros": lambda m: m.ones(2).new_zeros(2, device="cuda"),
    "new_ones": lambda m: m.ones(2).new_ones(2, device="cuda"),
    "new_tensor": lambda m: m.ones(2).new_tensor([1.0], device="cuda"),
    "current_device": lambda m: m.cuda.current_device(),
    "synchronize": lambda m: m.cuda.synchronize(),
    "synchronize(0)": lambda m: m.cuda.synchronize(0),
    "get_device_name": lambda m: m.cuda.get_device_name(),
    "get_device_name(0)": lambda m: m.cuda.get_device_name(0),
    "get_device_name('cpu')": lambda m: m.cuda.get_device_name("cpu"),  # (torch sets CUDA up first)
    "get_device_properties(0)": lambda m: m.cuda.get_device_properties(0),
    "get_device_capability": lambda m: m.cuda.get_device_capability(),
    "set_device(0)": lambda m: m.cuda.set_device(0),
    "current_stream": lambda m: m.cuda.current_stream(),
    "default_stream": lambda m: m.cuda.default_stream(),
    # torch makes a device-less Stream with the CUDA runtime (torch.AcceleratorError, the
    # runtime's cudaErrorInsufficientDriver); with a device it goes through _lazy_init
    "Stream()": lambda m: m.cuda.Stream(),
    "Stream(device=0)": lambda m: m.cuda.Stream(device=0),
    "Event().record()": lambda m: m.cuda.Event().record(),
    "Event().wait()": lambda m: m.cuda.Event().wait(),
    "profiler.start()": lambda m: m.cuda.profiler.start(),
    "profiler.stop()": lambda m: m.cuda.profiler.stop(),
    "with cuda.device(0)": lambda m: _enter_device(m),
    "reset_peak_memory_stats()": lambda m: m.cuda.reset_peak_memory_stats(),
}


@pytest.mark.parametrize("name", list(CUDA_REQUESTS))
def test_cuda_request_raises(name):
    with pytest.raises(RuntimeError) as info:
        CUDA_REQUESTS[name](rgrad)
    if name == "Stream()":
        assert type(info.value) is rgrad.AcceleratorError
        if WHY == NO_DRIVER:  # (the runtime's cudaErrorInsufficientDriver)
            assert info.value.error_code == 35
            assert str(info.value).startswith(
                "CUDA error: CUDA driver version is insufficient for CUDA runtime version\n")
    elif name == "reset_peak_memory_stats()":
        assert str(info.value) == "invalid argument to reset_peak_memory_stats"
    else:
        assert type(info.value) is RuntimeError and str(info.value) == WHY
    assert rgrad.cuda.is_initialized() is False


@pytest.mark.parametrize("name", list(CUDA_REQUESTS))
def test_cuda_request_raises_as_torch(name, torch):
    assert_same_error(CUDA_REQUESTS[name], torch)


def test_accelerator_error_is_torchs(torch):
    assert issubclass(rgrad.AcceleratorError, RuntimeError)
    assert rgrad.cuda.AcceleratorError is rgrad.AcceleratorError
    assert (rgrad.AcceleratorError.__module__, rgrad.AcceleratorError.__name__) == ("rgrad", "AcceleratorError")
    assert torch.cuda.AcceleratorError is torch.AcceleratorError
    with pytest.raises(torch.AcceleratorError) as theirs:
        torch.cuda.Stream()
    with pytest.raises(rgrad.AcceleratorError) as ours:
        rgrad.cuda.Stream()
    assert ours.value.error_code == theirs.value.error_code


# Requests rejected before any device is touched: the same errors with or without a GPU.
ARGUMENT_ERRORS = {
    "x.cuda('cpu')": lambda m: m.ones(1).cuda("cpu"),
    "x.cuda('mps')": lambda m: m.ones(1).cuda("mps"),
    "x.cuda(-1)": lambda m: m.ones(1).cuda(-1),
    "x.to(-1)": lambda m: m.ones(1).to(-1),
    "zeros device=-1": lambda m: m.zeros(1, device=-1),
    "zeros device='foo'": lambda m: m.zeros(1, device="foo"),
    "zeros device='cuda:x'": lambda m: m.zeros(1, device="cuda:x"),
    "x.to('foo')": lambda m: m.ones(1).to("foo"),
    "x.to('mps')": lambda m: m.ones(1).to("mps"),
    "tensor device='mps'": lambda m: m.tensor([1.0], device="mps"),
    "Stream(device='cpu')": lambda m: m.cuda.Stream(device="cpu"),
    "set_device('cpu')": lambda m: m.cuda.set_device("cpu"),
    "reset_peak_memory_stats('cpu')": lambda m: m.cuda.reset_peak_memory_stats("cpu"),
    "elapsed_time without timing": lambda m: m.cuda.Event().elapsed_time(m.cuda.Event()),
    "elapsed_time unrecorded": lambda m: m.cuda.Event(enable_timing=True).elapsed_time(
        m.cuda.Event(enable_timing=True)),
}


@pytest.mark.parametrize("name", list(ARGUMENT_ERRORS))
def test_argument_error_as_torch(name, torch):
    assert_same_error(ARGUMENT_ERRORS[name], torch)


@pytest.mark.parametrize("name", list(ARGUMENT_ERRORS))
def test_argument_error(name):
    with pytest.raises((RuntimeError, ValueError)) as info:
        ARGUMENT_ERRORS[name](rgrad)
    assert "NVIDIA" not in str(info.value)


def test_other_device_types_are_refused_by_factories():
    # (torch's factories raise NotImplementedError from its dispatcher for these types and make
    # meta tensors; rgrad has neither, and refuses them as torch's tensor()/to() do)
    for kind in ["mps", "meta", "xla"]:
        with pytest.raises(RuntimeError, match=f"^rgrad is not linked with support for {kind} devices$"):
            rgrad.zeros(1, device=kind)
        with pytest.raises(RuntimeError, match=f"^rgrad is not linked with support for {kind} devices$"):
            rgrad.ones(1).to(kind)


# ---- 3. rgrad.device against torch.device -----------------------------------------------------

DEVICE_ARGS = [
    ("cpu",), ("cuda",), ("cuda:1",), ("cuda", 1), (1,), (0,), ("cpu", 0), ("cpu:0",), ("cuda", None),
    ("mps",), ("mps:0",), ("meta",), ("xla",), ("privateuseone",), ("cuda:10",), ("cuda:127",),
]


def _described(d):
    return repr(d), str(d), d.type, d.index


@pytest.mark.parametrize("args", DEVICE_ARGS, ids=repr)
def test_device_forms(args):
    d = rgrad.device(*args)
    assert rgrad.device(d) == d and rgrad.device(str(d)) == d and hash(rgrad.device(str(d))) == hash(d)
    assert eval(repr(d), {"device": rgrad.device}) == d


@pytest.mark.parametrize("args", DEVICE_ARGS, ids=repr)
def test_device_forms_as_torch(args, torch):
    ours, theirs = rgrad.device(*args), torch.device(*args)
    assert _described(ours) == _described(theirs)
    assert hash(ours) == hash(theirs)
    assert _described(rgrad.device(ours)) == _described(torch.device(theirs))


def test_device_forms_known_values():
    assert _described(rgrad.device("cpu")) == ("device(type='cpu')", "cpu", "cpu", None)
    assert _described(rgrad.device("cuda")) == ("device(type='cuda')", "cuda", "cuda", None)
    assert _described(rgrad.device("cuda:1")) == ("device(type='cuda', index=1)", "cuda:1", "cuda", 1)
    assert rgrad.device("cuda", 1) == rgrad.device("cuda:1") == rgrad.device(1) == rgrad.device(type="cuda", index=1)
    assert rgrad.device(rgrad.device("cuda:2")).index == 2
    assert rgrad.device("mps").type == "mps"  # torch describes every device type it knows
    assert type(rgrad.device).__name__ == "type" and rgrad.device.__module__ == "rgrad"


def test_device_equality_and_hash():
    D = rgrad.device
    assert D("cuda") != D("cuda:0")  # no index is not index 0
    assert D("cuda", 0) == D("cuda:0") and D("cpu") == D("cpu") and D("cpu") != D("cuda")
    assert D("cpu") != "cpu" and not (D("cpu") == "cpu")
    assert len({D("cuda:0"), D("cuda", 0), D("cuda"), D("cpu"), D("cpu")}) == 3
    assert {D("cuda", 1): "x"}[D("cuda:1")] == "x"
    # torch.device's hash: c10::DeviceType << 16 | (uint8) index
    assert [hash(D(s)) for s in ["cpu", "cuda", "cuda:0", "cuda:1", "meta"]] == [255, 65791, 65536, 65537, 917759]


def test_device_equality_and_hash_as_torch(torch):
    for a in DEVICE_ARGS:
        for b in DEVICE_ARGS:
            assert (rgrad.device(*a) == rgrad.device(*b)) == (torch.device(*a) == torch.device(*b)), (a, b)
    assert (rgrad.device("cpu") == "cpu") == (torch.device("cpu") == "cpu")


DEVICE_ERRORS = {
    "'foo'": lambda m: m.device("foo"),
    "'CPU'": lambda m: m.device("CPU"),
    "'Cuda'": lambda m: m.device("Cuda"),
    "''": lambda m: m.device(""),
    "'cuda:x'": lambda m: m.device("cuda:x"),
    "'cuda:-1'": lambda m: m.device("cuda:-1"),
    "'cuda:'": lambda m: m.device("cuda:"),
    "':0'": lambda m: m.device(":0"),
    "'cuda:01'": lambda m: m.device("cuda:01"),
    "'cuda:1:2'": lambda m: m.device("cuda:1:2"),
    "' cuda'": lambda m: m.device(" cuda"),
    "'cuda '": lambda m: m.device("cuda "),
    "'cuda:99999999999'": lambda m: m.device("cuda:99999999999"),
    "('cuda', -1)": lambda m: m.device("cuda", -1),
    "('cpu', -2)": lambda m: m.device("cpu", -2),
    "-1": lambda m: m.device(-1),
    "('cuda:0', 1)": lambda m: m.device("cuda:0", 1),
    "('cuda:0', None)": lambda m: m.device("cuda:0", None),
    "type='cuda:1', index=0": lambda m: m.device(type="cuda:1", index=0),
    "1.0": lambda m: m.device(1.0),
    "None": lambda m: m.device(None),
    "True": lambda m: m.device(True),
    "('cuda', 1.0)": lambda m: m.device("cuda", 1.0),
    "('cuda', '1')": lambda m: m.device("cuda", "1"),
    "('cuda', True)": lambda m: m.device("cuda", True),
    "(device, 1)": lambda m: m.device(m.device("cuda"), 1),
    "<": lambda m: m.device("cpu") < m.device("cuda"),
    "setattr type": lambda m: setattr(m.device("cuda:1"), "type", "cpu"),
    "setattr index": lambda m: setattr(m.device("cuda:1"), "index", 2),
    "delattr type": lambda m: delattr(m.device("cuda:1"), "type"),
    "setattr other": lambda m: setattr(m.device("cuda:1"), "foo", 2),
}


@pytest.mark.parametrize("name", list(DEVICE_ERRORS))
def test_device_error_as_torch(name, torch):
    assert_same_error(DEVICE_ERRORS[name], torch)


@pytest.mark.parametrize("name", list(DEVICE_ERRORS))
def test_device_error(name):
    with pytest.raises((RuntimeError, TypeError, AttributeError)):
        DEVICE_ERRORS[name](rgrad)


def test_device_error_messages():
    with pytest.raises(RuntimeError, match=r"^Expected one of cpu, cuda, .* device type at start of device string: foo$"):
        rgrad.device("foo")
    with pytest.raises(RuntimeError, match=r"^Invalid device string: 'cuda:x'$"):
        rgrad.device("cuda:x")
    with pytest.raises(RuntimeError, match=r"^Device index must not be negative$"):
        rgrad.device("cuda", -1)
    with pytest.raises(RuntimeError, match=r"^type \(string\) must not include an index because index was passed"):
        rgrad.device("cuda:0", 1)
    with pytest.raises(TypeError, match=r"^device\(\) received an invalid combination of arguments - got \(float\)"):
        rgrad.device(1.0)
    with pytest.raises(AttributeError, match=r"^attribute 'index' of 'rgrad.device' objects is not writable$"):
        rgrad.device("cuda:1").index = 0


@pytest.mark.parametrize("s", ["cpu", "cuda", "cuda:1", "mps:0"])
def test_device_pickles(s):
    d = rgrad.device(s)
    for proto in range(pickle.HIGHEST_PROTOCOL + 1):
        back = pickle.loads(pickle.dumps(d, protocol=proto))
        assert type(back) is rgrad.device and back == d and repr(back) == repr(d)
    assert b"rgrad" in pickle.dumps(d) and b"_tensor" not in pickle.dumps(d)


def test_device_reduce_as_torch(torch):
    for s in ["cpu", "cuda", "cuda:1"]:
        ours, theirs = rgrad.device(s).__reduce__(), torch.device(s).__reduce__()
        assert ours[0] is rgrad.device and theirs[0] is torch.device and ours[1] == theirs[1]


# ---- 4. the device API of CPU tensors ----------------------------------------------------------


def test_cpu_tensor_device_api():
    x = rgrad.tensor([1.0, 2.0])
    assert x.device == rgrad.device("cpu") and repr(x.device) == "device(type='cpu')" and str(x.device) == "cpu"
    assert x.is_cuda is False and x.is_cpu is True and x.get_device() == -1
    assert x.cpu() is x
    assert x.to("cpu") is x
    assert x.to(rgrad.device("cpu")) is x
    assert x.to(device="cpu") is x
    y = x.to("cpu", rgrad.float64)
    assert y.dtype == rgrad.float64 and y.device.type == "cpu" and y.tolist() == [1.0, 2.0]
    other = rgrad.zeros(3, dtype=rgrad.float64)
    z = x.to(other)
    assert z.dtype == rgrad.float64 and z.is_cpu and z.tolist() == [1.0, 2.0]
    assert x.to(rgrad.zeros(1)) is x
    c = x.to(dtype=rgrad.float32, copy=True)
    assert c is not x and c.tolist() == [1.0, 2.0]
    c[0] = 5.0
    assert x.tolist() == [1.0, 2.0]
    assert x.to("cpu:0").device == rgrad.device("cpu")


def test_cpu_factories():
    cpu = rgrad.device("cpu")
    x = rgrad.ones(2)
    made = [
        rgrad.zeros(2, device="cpu"),
        rgrad.zeros(2, device=cpu),
        rgrad.ones(2, device="cpu:0"),
        rgrad.full((2,), 1.0, device="cpu"),
        rgrad.empty(2, device="cpu"),
        rgrad.arange(2, device="cpu"),
        rgrad.linspace(0, 1, 2, device="cpu"),
        rgrad.eye(2, device="cpu"),
        rgrad.rand(2, device="cpu"),
        rgrad.randn(2, device="cpu"),
        rgrad.randint(0, 5, (2,), device="cpu"),
        rgrad.tensor([1.0], device=cpu),
        rgrad.tensor([1.0], device="cpu"),
        rgrad.zeros_like(x, device="cpu"),
        rgrad.ones_like(x, device=cpu),
        rgrad.rand_like(x, device="cpu"),
        rgrad.randint_like(x, 5, device="cpu"),
        x.new_ones(2, device="cpu"),
        x.new_zeros(2, device=cpu),
        x.new_tensor([1.0], device="cpu"),
    ]
    for t in made:
        assert t.device == cpu and t.is_cpu and not t.is_cuda and t.get_device() == -1
    assert x.new_ones(2, device="cpu").tolist() == [1.0, 1.0]
    assert rgrad.zeros_like(x, device="cpu").tolist() == [0.0, 0.0]


def test_cpu_tensor_device_api_as_torch(torch):
    for m in (rgrad, torch):
        x = m.tensor([1.0, 2.0])
        assert repr(x.device) == "device(type='cpu')" and x.get_device() == -1
        assert (x.is_cuda, x.is_cpu, x.cpu() is x, x.to("cpu") is x, x.to(m.device("cpu")) is x) == (
            False, True, True, True, True)
        assert x.to(dtype=m.float32, copy=True) is not x and x.to(m.zeros(1)) is x
        assert repr(m.zeros(2, device="cpu:0").device) == "device(type='cpu')"


def test_backends_cuda_matmul_allow_tf32_is_settable():
    matmul = rgrad.backends.cuda.matmul
    assert matmul.allow_tf32 is False
    try:
        matmul.allow_tf32 = True
        assert matmul.allow_tf32 is True
    finally:
        matmul.allow_tf32 = False
    assert matmul.allow_tf32 is False


def test_exception_classes_and_types():
    assert rgrad.cuda.OutOfMemoryError is rgrad.OutOfMemoryError
    assert issubclass(rgrad.OutOfMemoryError, RuntimeError)
    assert isinstance(rgrad.cuda.Stream, type) and isinstance(rgrad.cuda.Event, type)
    assert isinstance(rgrad.cuda.device, type)
    assert callable(rgrad.cuda.profiler.start) and callable(rgrad.cuda.profiler.stop)
    for name in rgrad.cuda.__all__:
        assert hasattr(rgrad.cuda, name), name


def test_exception_classes_as_torch(torch):
    assert torch.cuda.OutOfMemoryError is torch.OutOfMemoryError
    assert issubclass(torch.OutOfMemoryError, RuntimeError)
    assert rgrad.OutOfMemoryError.__name__ == torch.OutOfMemoryError.__name__
    for name in ["is_available", "device_count", "is_initialized", "current_device", "set_device", "device",
                 "get_device_name", "get_device_properties", "get_device_capability", "synchronize", "Stream",
                 "Event", "current_stream", "default_stream", "stream", "manual_seed", "manual_seed_all",
                 "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
                 "reset_peak_memory_stats", "empty_cache", "memory_stats", "OutOfMemoryError", "profiler"]:
        assert hasattr(torch.cuda, name) and hasattr(rgrad.cuda, name), name


def test_stream_context_with_none_does_nothing():
    with rgrad.cuda.stream(None):
        pass


# ---- the default device (torch.set_default_device, `with torch.device(...)`) ----------------------


def test_default_device_is_the_cpu_and_settable_per_thread():
    import threading

    assert repr(rgrad.get_default_device()) == "device(type='cpu')"
    with rgrad.device("cpu") as d:
        assert d == rgrad.device("cpu") and rgrad.zeros(1).device == rgrad.device("cpu")
    rgrad.set_default_device("cpu")
    rgrad.set_default_device(None)
    assert rgrad.get_default_device() == rgrad.device("cpu")
    with rgrad.device("cuda"):
        seen = []
        t = threading.Thread(target=lambda: seen.append(rgrad.get_default_device()))
        t.start()
        t.join()
        assert seen == [rgrad.device("cpu")]  # (another thread keeps its own default)
    assert rgrad.zeros(1).device == rgrad.device("cpu")  # (restored after the block)


@pytest.mark.parametrize("make", [
    lambda m: m.zeros(2), lambda m: m.ones(2), lambda m: m.full((2,), 1.0), lambda m: m.arange(3),
    lambda m: m.tensor([1.0]), lambda m: m.randn(2), lambda m: m.eye(2), lambda m: m.get_default_device(),
])
def test_factories_in_a_cuda_block_raise_torchs_error(make, torch):
    def run(m):
        with m.device("cuda"):
            return make(m)

    assert_same_error(lambda m: run(m), torch)
