# seed: 003_78fe1912a2aeca30.txt lines 152-217 (notebook cells In [32]-[39]: custom_add, then gradcheck on it)
import warnings

warnings.showwarning = lambda message, category, *args, **kwargs: print(f"{category.__name__}: {message}")

# In [32]
import torch
from torch.autograd import Variable

class custom_add(torch.autograd.Function): 
    """
    forward and backward both use tensor.
    """
    @staticmethod
    def forward(ctx, input, input2):
        """
        input:tensor,output:tensor,ctx是可以用来在反向传播计算的存储属性的对象
        如ctx.save_for_backward可以在backward中使用
        """
        ctx.save_for_backward(input,input2)
        output = input + input2
        return output
    
    @staticmethod
    def backward(ctx,grad_output):
        """
      　backward,我们接受一个存储loss梯度的tensor(grad_output)
        同时根据输入来计算应该返回的的梯度
     　　"""
        input1, input2=ctx.saved_tensors #在forward中存储的数据 save_for_backward
        grad_input=grad_output.clone()
        return grad_input,grad_input #由于input是两个输入，所以也返回两个grad

# In [33]
new_add = custom_add.apply
# In [34]
a=Variable(torch.Tensor([1]),requires_grad=True)
b=Variable(torch.Tensor([2]),requires_grad=True)
c=new_add(a,b)
# In [35]
print(repr(c))
# In [36]
c.backward()
# In [37]
print(repr(a.grad))
# In [38]
from torch.autograd import gradcheck

# gradchek takes a tuple of tensor as input, check if your gradient
# evaluated with these tensors are close enough to numerical
# approximations and returns True if they all verify this condition.
input = (Variable(torch.Tensor([2]).double(), requires_grad=True), Variable(torch.Tensor([3]).double(), requires_grad=True),)
test = gradcheck(custom_add.apply, input, eps=1e-6, atol=1e-4)
# In [39]
print(test)
