# seed: 004_ad06bd932b675186.txt lines 74-92 (four ways to stop gradients)
import warnings

warnings.showwarning = lambda message, category, *args, **kwargs: print(f"{category.__name__}: {message}")

import torch

## 方案一
x = torch.tensor([1.], requires_grad=True)
with torch.no_grad():
	y = x * 2
print(repr(y.requires_grad)) # False
## 方案二
@torch.no_grad()
def doubler(x):
	return x * 2
z = doubler(x)
print(repr(z.requires_grad)) # False
## 方案三
flag = False # 如果这里为True则不阻止梯度传递
with torch.set_grad_enabled(flag):
	y = x * 2
print(repr(y.requires_grad)) # False
## 方案四
print(repr(torch.set_grad_enabled(False))) # 如果是True则不阻止梯度传递
y = x * 2
print(repr(y.requires_grad)) # False
