# seed: 001_dfd3d349b26eb960.txt lines 92-107 (set_grad_enabled; REPL statements run one by one, as the REPL would)
import warnings

warnings.showwarning = lambda message, category, *args, **kwargs: print(f"{category.__name__}: {message}")

import torch

try:
    x = torch.tensor([1], requires_grad=True)
except Exception as e:
    print(type(e).__name__, e)
is_train = False
try:
    with torch.set_grad_enabled(is_train):
        y = x * 2
except Exception as e:
    print(type(e).__name__, e)
try:
    print(repr(y.requires_grad))
except Exception as e:
    print(type(e).__name__, e)
print(repr(torch.set_grad_enabled(True)))
try:
    y = x * 2
except Exception as e:
    print(type(e).__name__, e)
try:
    print(repr(y.requires_grad))
except Exception as e:
    print(type(e).__name__, e)
print(repr(torch.set_grad_enabled(False)))
try:
    y = x * 2
except Exception as e:
    print(type(e).__name__, e)
try:
    print(repr(y.requires_grad))
except Exception as e:
    print(type(e).__name__, e)
