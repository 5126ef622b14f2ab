# seed: 002_c5eeda4145fc784c.txt lines 17-126 (notebook cells In [1]-[11], run in order; In [7] runs once here)
# unseeded random numbers: torch seeds its default generator at random in each process, so the numbers are masked
import warnings

warnings.showwarning = lambda message, category, *args, **kwargs: print(f"{category.__name__}: {message}")

# In [1]
import torch
x = torch.ones(2, 2, requires_grad=True)
print(x)
# In [2]
y = x + 2
print(y)
# In [3]
# y 作为操作的结果被创建，所以它有 grad_fn.
print(y.grad_fn)
# In [4]
# 在 y 上进行更多操作
z = y * y * 3
out = z.mean()
print(z, out)
# In [5]
a = torch.randn(2, 2)
a = ((a * 3) / (a - 1))
print(a.requires_grad)
a.requires_grad_(True)
print(a.requires_grad)
b = (a * a).sum()
print(b.grad_fn)
# In [7]
out.backward()
# In [8]
print(x.grad)
# In [9]
x = torch.randn(3, requires_grad=True)
y = x * 2
while y.data.norm() < 1000: # norm() 范数
    y = y * 2
print(y)
# In [10]
v = torch.tensor([0.1, 1.0, 0.0001], dtype=torch.float)
y.backward(v)
print(x.grad)
# In [11]
print(x.requires_grad)
print((x ** 2).requires_grad)
with torch.no_grad():
    print((x ** 2).requires_grad)
