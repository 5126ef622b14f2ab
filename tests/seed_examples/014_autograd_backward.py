# seed: 004_ad06bd932b675186.txt lines 38-49 (torch.autograd.backward, then a second backward that fails)
import warnings

warnings.showwarning = lambda message, category, *args, **kwargs: print(f"{category.__name__}: {message}")

import torch

a = torch.tensor([1.,2.], requires_grad=True)
b = torch.tensor([1.,2.], requires_grad=True)
c = 2*a+3*b+1
grad = torch.tensor([1.,1.])
torch.autograd.backward(c, grad_tensors=grad)
print(repr(a.grad))
# tensor([2., 2.])
print(repr(b.grad))
# tensor([3., 3.])
#####################
print(repr(c.grad)) # 非叶节点不储存梯度
try:
    torch.autograd.backward(c, grad_tensors=grad) # 继续执行报错
except Exception as e:
    print(type(e).__name__, e)
