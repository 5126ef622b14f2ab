# seed: 001_dfd3d349b26eb960.txt lines 68-84 (enable_grad; REPL statements run one by one, as the REPL would)
import warnings

warnings.showwarning = lambda message, category, *args, **kwargs: print(f"{category.__name__}: {message}")

import torch

try:
    x = torch.tensor([1], requires_grad=True)
except Exception as e:
    print(type(e).__name__, e)
try:
    with torch.no_grad():
        with torch.enable_grad():
            y = x * 2
except Exception as e:
    print(type(e).__name__, e)
try:
    print(repr(y.requires_grad))
except Exception as e:
    print(type(e).__name__, e)
try:
    y.backward()
except Exception as e:
    print(type(e).__name__, e)
try:
    print(repr(x.grad))
except Exception as e:
    print(type(e).__name__, e)


@torch.enable_grad()
def doubler(x):
    return x * 2


try:
    with torch.no_grad():
        z = doubler(x)
except Exception as e:
    print(type(e).__name__, e)
try:
    print(repr(z.requires_grad))
except Exception as e:
    print(type(e).__name__, e)
