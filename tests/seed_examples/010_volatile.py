# seed: 003_78fe1912a2aeca30.txt lines 88-97 (notebook cells In [16]-[17]: volatile=True warns)
import warnings

warnings.showwarning = lambda message, category, *args, **kwargs: print(f"{category.__name__}: {message}")

import torch
from torch.autograd import Variable

# In [16]
a=Variable(torch.Tensor([1]),volatile=True) 
b=Variable(torch.Tensor([2]),requires_grad=True)
c=a+b
# In [17]
c.backward()
