# From shared/seeds/000 ("Profiler" section): the result methods it documents, on its example:
# key_averages(), table(sort_by=...) with each key it lists, total_average(), export_chrome_trace(path).
import json
import os
import tempfile

import torch
from torch.autograd import Variable

x = Variable(torch.randn(1, 1), requires_grad=True)
with torch.autograd.profiler.profile() as prof:
    y = x ** 2
    y.backward()
print(prof.key_averages())
for key in ["cpu_time", "cuda_time", "cpu_time_total", "cuda_time_total", "count"]:
    print(prof.table(sort_by=key))
print(prof.total_average())
with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "trace.json")
    prof.export_chrome_trace(path)
    with open(path) as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    print(sorted({e["name"] for e in events if e.get("ph") == "X" and "Backward" in e["name"]}))
