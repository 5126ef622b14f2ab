"""rgrad demo: the autograd tutorial from the seed documents, then a tiny model trained
with manual SGD. Runs unchanged with ``import torch`` in place of ``import rgrad as torch``."""

import rgrad as torch
import rgrad.nn.functional as F

print("== the tutorial ==")
x = torch.ones(2, 2, requires_grad=True)
print(x)
y = x + 2
print(y)
print(y.grad_fn)
z = y * y * 3
out = z.mean()
print(z, out)
out.backward()
print(x.grad)  # d(mean(3(x+2)^2))/dx = 1.5(x+2) = 4.5

x = torch.randn(3, requires_grad=True)
y = x * 2
while y.data.norm() < 1000:
    y = y * 2
v = torch.tensor([0.1, 1.0, 0.0001], dtype=torch.float)
y.backward(v)
print(x.grad)  # v * 2^k

print(x.requires_grad, (x**2).requires_grad)
with torch.no_grad():
    print((x**2).requires_grad)

print("\n== a two-layer MLP on a toy problem, trained with manual SGD ==")
torch.manual_seed(0)
# classify points by which side of a circle they fall on
n = 256
pts = torch.rand(n, 2) * 4 - 2
labels = ((pts * pts).sum(1) < 1.5).long()
w1 = (torch.randn(2, 32) * 0.5).requires_grad_()
b1 = torch.zeros(32, requires_grad=True)
w2 = (torch.randn(32, 2) * 0.5).requires_grad_()
b2 = torch.zeros(2, requires_grad=True)
params = [w1, b1, w2, b2]
lr = 0.5
for step in range(201):
    h = F.relu(pts @ w1 + b1)
    logits = h @ w2 + b2
    loss = F.cross_entropy(logits, labels)
    loss.backward()
    with torch.no_grad():
        for p in params:
            p -= lr * p.grad
            p.grad.zero_()
    if step % 40 == 0:
        acc = (logits.argmax(1) == labels).float().mean()
        print(f"step {step:3d}  loss {loss.item():.4f}  accuracy {acc.item():.3f}")
