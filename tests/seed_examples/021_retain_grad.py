# seed: 004_ad06bd932b675186.txt lines 159-165 (retain_grad)
import warnings

warnings.showwarning = lambda message, category, *args, **kwargs: print(f"{category.__name__}: {message}")

import torch

a = torch.tensor([1.,2.], requires_grad=True)
b = torch.tensor([1.,2.], requires_grad=True)
c = 2*a+3*b+1
d = 2*c+1
c.retain_grad()
d.backward(torch.tensor([1.,1.]))
print(repr(c.grad)) # tensor([2., 2.])
