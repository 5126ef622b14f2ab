# seed: 003_78fe1912a2aeca30.txt lines 39-66 (notebook cells In [6]-[12]; echoed cell values printed with repr)
import warnings

warnings.showwarning = lambda message, category, *args, **kwargs: print(f"{category.__name__}: {message}")

import torch
from torch.autograd import Variable

# In [6]
a = Variable(torch.Tensor([1]),requires_grad=True) 
b = Variable(torch.Tensor([2]),requires_grad=True)
c = Variable(torch.Tensor([3]),requires_grad=True)
# In [7]
d = a + 2*b
e = d + c
# In [8]
e.backward()
# In [9]
print(a.grad,b.grad,c.grad)
# In [10]
print(repr(d.grad)) #中间梯度值不保存，为空
# In [11]
print(repr(a.grad_fn)) #第一个节点的.grad_fn为空
# In [12]
print(repr(e.grad_fn))
