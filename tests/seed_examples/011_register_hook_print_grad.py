# seed: 003_78fe1912a2aeca30.txt lines 107-138 (notebook cells In [18]-[24]: a hook that prints y's gradient)
# unseeded random numbers: torch seeds its default generator at random in each process, so the numbers are masked
import warnings

warnings.showwarning = lambda message, category, *args, **kwargs: print(f"{category.__name__}: {message}")

# In [18]
import torch
from torch.autograd import Variable

#定义一个打印函数，每次反向传播都将相应的grad打印出来
def print_grad(grad):
    print(grad)

# In [19]
x = Variable(torch.randn([1]), requires_grad=True)
# In [20]
y = x+2
# In [21]
z = torch.mean(torch.pow(y, 2))
# In [22]
print(repr(y.register_hook(print_grad))) #将打印函数挂在变量y上
# In [23]
z.backward()
# In [24]
print(repr(y.grad_fn))
