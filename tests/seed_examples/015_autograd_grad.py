# seed: 004_ad06bd932b675186.txt lines 59-68 (torch.autograd.grad, then a second grad that fails)
import warnings

warnings.showwarning = lambda message, category, *args, **kwargs: print(f"{category.__name__}: {message}")

import torch

a = torch.tensor([1.,2.], requires_grad=True)
b = torch.tensor([1.,2.], requires_grad=True)
c = 2*a+3*b+1
d = 2*c+1
grad = torch.tensor([1.,1.])
print(repr(torch.autograd.grad(d,(a,b,c),grad))) # 非叶节点也能输出梯度!
# (tensor([4., 4.]), tensor([6., 6.]), tensor([2., 2.]))
print(repr((a.grad, b.grad)))
# (None, None) # 该函数结果不储存在.grad中
try:
    torch.autograd.grad(d,a,grad) # 错误，一次前向只能操作一次
except Exception as e:
    print(type(e).__name__, e)
