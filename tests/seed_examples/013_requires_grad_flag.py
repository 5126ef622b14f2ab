# seed: 004_ad06bd932b675186.txt lines 14-16 (requires_grad; lines 19-21 need a model the seed never defines)
import warnings

warnings.showwarning = lambda message, category, *args, **kwargs: print(f"{category.__name__}: {message}")

import torch

a=torch.tensor([1.], requires_grad=True)
b=a+1
print(repr(b.requires_grad)) # True
