# seed: 004_ad06bd932b675186.txt lines 144-153 (register_hook)
import warnings

warnings.showwarning = lambda message, category, *args, **kwargs: print(f"{category.__name__}: {message}")

import torch

def hook_func(grad): # 钩子函数的参数固定为grad
	print(grad)
a = torch.tensor([1.,2.], requires_grad=True)
b = torch.tensor([1.,2.], requires_grad=True)
c = 2*a+3*b+1
d = 2*c+1
hook = c.register_hook(hook_func) # 某张量注册一个钩子函数
d.backward(torch.tensor([1.,1.]))
# tensor([2., 2.]) # 钩子函数被执行
# hook.remove() # 如果保留计算图，可以用这个方法解除钩子
