# seed: 004_ad06bd932b675186.txt lines 173-230 (Func(Function), then gradcheck on it with random float64 inputs)
import warnings

warnings.showwarning = lambda message, category, *args, **kwargs: print(f"{category.__name__}: {message}")

import torch

class Func(torch.autograd.Function):

	@staticmethod
	def forward(ctx, x, y):
		# 输入都是torch.Tensor
		# ctx是固定的，后面参数自己设计
		expx = torch.exp(x) 
		expy = torch.exp(y)
		# 可以不用torch内置操作,自己调DLL
		result = 3*x+2*y+expx+expy
		# 为反向传播保留输出
		ctx.save_for_backward(expx, expy)
		return result
		
	@staticmethod
	def backward(ctx, grad_output):
		# ctx, grad_output 都是固定的
		# grad_output 为上级传下来的梯度张量
		expx, expy,  = ctx.saved_tensors
		grad_x = grad_output*(3+expx)
		grad_y = grad_output*(2+expy)
		return grad_x, grad_y

myfunc = Func.apply # 使用别名实例化

# 下面进行测试
x = torch.tensor([1.,2.], requires_grad=True)
y = torch.tensor([3.,4.], requires_grad=True)
z = myfunc(x,y)
z.backward(torch.tensor([1.,1.]))
print(repr((x.grad, y.grad)))
# (tensor([ 5.7183, 10.3891]), 
#  tensor([22.0855, 56.5981]))
## 14. gradcheck
iptx = torch.randn(20, requires_grad=True).double()
ipty = torch.randn(20, requires_grad=True).double()
ipt = iptx,ipty
# 必须是 float64 类型的输入, requires_grad必须为True
test = torch.autograd.gradcheck(myfunc, ipt, atol=1e-4)
print(test)  #　没问题的话输出True
## 15. gradgradcheck
test = torch.autograd.gradcheck(myfunc, ipt) # 上述函数无法通过检测
print(test)  #　没问题的话输出True
