# seed: 004_ad06bd932b675186.txt lines 116-122 (detach_)
import warnings

warnings.showwarning = lambda message, category, *args, **kwargs: print(f"{category.__name__}: {message}")

import torch

a = torch.tensor([1.,2.], requires_grad=True)
b = torch.tensor([1.,2.], requires_grad=True)
c = 2*a+3*b+1
cc = c.detach_()
print(repr(cc is c)) # True # 这是一个in-place操作
print(repr(cc.requires_grad)) # False
print(repr(cc))  # tensor([ 6., 11.])
