# From shared/seeds/000 ("Profiler" section) and shared/seeds/003 (In [40]/[41]): the same program.
import torch
from torch.autograd import Variable

x = Variable(torch.randn(1, 1), requires_grad=True)
with torch.autograd.profiler.profile() as prof:
    y = x ** 2
    y.backward()
# NOTE: some columns were removed for brevity
print(prof)
