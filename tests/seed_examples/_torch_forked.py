"""Run seed examples on torch, each in a child forked from one process that imported torch.

    python _torch_forked.py OUTDIR NNN_example ...

writes OUTDIR/NNN_example.stdout, .stderr and .rc for each example. Importing
torch takes seconds, so it is imported once and every example runs in a fresh
fork: the child starts from the state of a process that has just run
``import torch`` and nothing else, which is what a fresh ``python NNN_example.py``
sees (only the generator's seed is shared by the children, and torch draws that
seed at random in every process anyway).
"""

import os
import runpy
import sys
import traceback

import torch  # noqa: F401  (imported once, before the forks)

outdir, names = sys.argv[1], sys.argv[2:]
for name in names:
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
            os.dup2(os.open(os.path.join(outdir, f"{name}.stdout"), flags), 1)
            os.dup2(os.open(os.path.join(outdir, f"{name}.stderr"), flags), 2)
            sys.argv = [f"{name}.py"]
            runpy.run_path(f"{name}.py", run_name="__main__")
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    with open(os.path.join(outdir, f"{name}.rc"), "w") as f:
        f.write(str(os.waitstatus_to_exitcode(status)))
