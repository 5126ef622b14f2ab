# seed: 003_78fe1912a2aeca30.txt lines 74-86 (notebook cells In [13]-[15])
import warnings

warnings.showwarning = lambda message, category, *args, **kwargs: print(f"{category.__name__}: {message}")

import torch
from torch.autograd import Variable

# In [13]
a=Variable(torch.Tensor([1]),requires_grad=False) 
b=Variable(torch.Tensor([2]),requires_grad=True)
c=a+b
c.backward()
# In [14]
print(repr(a.grad))  # 因为a的requires_grad=False 所以不存储梯度值
# In [15]
print(repr(b.grad))
