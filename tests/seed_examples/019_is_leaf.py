# seed: 004_ad06bd932b675186.txt lines 134-138 (is_leaf)
import warnings

warnings.showwarning = lambda message, category, *args, **kwargs: print(f"{category.__name__}: {message}")

import torch

a = torch.tensor([1.,2.], requires_grad=True)
b = torch.tensor([1.,2.], requires_grad=True)
c = 2*a+3*b+1
print(repr(c.is_leaf)) # False
print(repr(a.is_leaf)) # True
