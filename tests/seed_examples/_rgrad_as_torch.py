"""Run one seed example with rgrad standing in for torch.

    python _rgrad_as_torch.py NNN_example.py

Every ``rgrad`` module is registered under the matching ``torch`` name before
the example runs, so ``import torch`` and ``from torch.autograd import Variable``
pick up rgrad. A ``torch`` submodule that rgrad lacks fails to import (the
lookup goes through ``rgrad.__path__``); the real torch is never loaded.
"""

import runpy
import sys

import rgrad
import rgrad.autograd.function
import rgrad.autograd.grad_mode
import rgrad.autograd.gradcheck
import rgrad.autograd.graph
import rgrad.autograd.variable
import rgrad.nn.functional
import rgrad.utils.hooks  # noqa: F401  (imported so that they are aliased below)

for name, module in list(sys.modules.items()):
    if name == "rgrad" or name.startswith("rgrad."):
        sys.modules["torch" + name[len("rgrad") :]] = module

sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
