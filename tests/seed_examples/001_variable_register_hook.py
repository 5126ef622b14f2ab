# seed: 000_523315897027595f.txt lines 133-144 (register_hook on a Variable; the seed's snippet has no imports)
import warnings

warnings.showwarning = lambda message, category, *args, **kwargs: print(f"{category.__name__}: {message}")

import torch
from torch.autograd import Variable

v = Variable(torch.Tensor([0, 0, 0]), requires_grad=True)
h = v.register_hook(lambda grad: grad * 2)  # double the gradient
v.backward(torch.Tensor([1, 1, 1]))
print(repr(v.grad.data))
h.remove()  # removes the hook
