"""torch's legacy typed constructors and Tensor.type() (issue 13), checked against torch
when it is installed."""

import pytest

import rgrad

MODULES = [rgrad]
try:
    import torch

    MODULES.append(torch)
except ImportError:  # pragma: no cover - torch is optional
    pass

TYPES = [("FloatTensor", "float32"), ("DoubleTensor", "float64"), ("LongTensor", "int64"), ("BoolTensor", "bool")]


@pytest.mark.parametrize("mod", MODULES, ids=lambda m: m.__name__)
@pytest.mark.parametrize("name, dtype", TYPES)
def test_legacy_constructor_from_data_sizes_and_nothing(mod, name, dtype):
    cls = getattr(mod, name)
    x = cls([1, 0, 2])
    assert x.dtype == getattr(mod, dtype)
    assert type(x) is mod.Tensor
    assert x.tolist() == mod.tensor([1, 0, 2], dtype=getattr(mod, dtype)).tolist()
    assert cls(2, 3).shape == (2, 3)
    assert cls(mod.Size([4])).shape == (4,)
    assert cls().shape == (0,)
    assert x.type() == f"{mod.__name__}.{name}"
    assert repr(cls) == f"<class '{mod.__name__}.{name}'>"


@pytest.mark.parametrize("mod", MODULES, ids=lambda m: m.__name__)
def test_isinstance_of_a_legacy_type_asks_for_the_dtype(mod):
    assert isinstance(mod.ones(2), mod.FloatTensor)
    assert not isinstance(mod.ones(2, dtype=mod.float64), mod.FloatTensor)
    assert isinstance(mod.ones(2, dtype=mod.float64), mod.DoubleTensor)
    assert isinstance(mod.tensor([1]), mod.LongTensor)
    assert not isinstance([1.0], mod.FloatTensor)
    assert isinstance(mod.FloatTensor([1.0]), mod.Tensor)


@pytest.mark.parametrize("mod", MODULES, ids=lambda m: m.__name__)
def test_legacy_constructor_values_and_errors(mod):
    assert mod.LongTensor([1.7, -2.2]).tolist() == [1, -2]
    assert mod.BoolTensor([1, 0]).tolist() == [True, False]
    x = mod.ones(2)
    alias = mod.FloatTensor(x)  # same type: an alias of the same data
    alias[0] = 5.0
    assert x.tolist() == [5.0, 1.0]
    with pytest.raises(TypeError, match=r"^new\(\): invalid data type 'str'$"):
        mod.FloatTensor("a")
    with pytest.raises(TypeError, match=r"^expected TensorOptions\(dtype=float, .*\(got TensorOptions\(dtype=double"):
        mod.FloatTensor(mod.ones(2, dtype=mod.float64))
    with pytest.raises(TypeError, match=r"^new\(\) received an invalid combination of arguments"):
        mod.FloatTensor([1.0], requires_grad=True)


@pytest.mark.parametrize("mod", MODULES, ids=lambda m: m.__name__)
def test_tensor_type_casts_by_name_class_or_dtype(mod):
    x = mod.tensor([1.5, 2.5])
    assert x.type() == f"{mod.__name__}.FloatTensor"
    assert x.type(f"{mod.__name__}.LongTensor").tolist() == [1, 2]
    assert x.type(mod.DoubleTensor).dtype == mod.float64
    assert x.type(mod.float64).dtype == mod.float64
    assert x.type(mod.FloatTensor) is x
    assert mod.tensor([True]).type() == f"{mod.__name__}.BoolTensor"
    with pytest.raises(ValueError, match=r"^invalid type: 'foo'$"):
        x.type("foo")


def test_torch_type_names_are_accepted_by_rgrad():
    # code written for torch passes torch's names as strings
    assert rgrad.ones(2).type("torch.DoubleTensor").dtype == rgrad.float64
