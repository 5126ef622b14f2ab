# seed: 004_ad06bd932b675186.txt lines 105-110 (detach)
import warnings

warnings.showwarning = lambda message, category, *args, **kwargs: print(f"{category.__name__}: {message}")

import torch

a = torch.tensor([1.,2.], requires_grad=True)
b = torch.tensor([1.,2.], requires_grad=True)
c = 2*a+3*b+1
cc = c.detach()
print(repr(cc.requires_grad)) # False
print(repr(cc))  # tensor([ 6., 11.])
