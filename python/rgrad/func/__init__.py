"""rgrad.func: torch.func's function transforms on rgrad's autograd.

``vmap``, ``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``linearize``, ``jacrev``, ``jacfwd``, ``hessian`` and
``functional_call``, with torch.func's signatures, pytree inputs and outputs, argnums,
has_aux and error messages; they nest (``grad(grad(f))``, ``jacfwd(jacrev(f))``,
``vmap(vmap(f))``), compose (``vmap(grad(f))`` gives per-sample gradients) and compose with
outer autograd. How the differentiation transforms work without torch.func's levels, and
what differs (jacrev / jacfwd batch through vmap as torch.func's, but jacfwd batches the
primals too; one forward-AD level, so no jvp inside a jvp; functional_call takes a function,
as rgrad has no nn.Module), is told in ``rgrad/func/_transforms.py``'s docstring; how vmap
works (BatchedTensor, batching rules, the function forms it swaps in while it runs) in
``rgrad/func/_vmap.py``'s.
"""

from rgrad.func._functional_call import functional_call
from rgrad.func._transforms import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, linearize, vjp
from rgrad.func._vmap import vmap


def debug_unwrap(tensor, *, recurse: bool = True):
    """Unwraps a functorch tensor (e.g. BatchedTensor) to its underlying tensor.

    This function should only be used in a debug setting (e.g. trying to print the value
    of a Tensor in a debugger). Otherwise, using the result of function inside of a
    function being transformed will lead to undefined behavior.

    Inside ``vmap`` the underlying tensor has the batch dim (where the BatchedTensor keeps
    it); ``recurse=False`` unwraps one vmap level only. rgrad's differentiation transforms
    work on ordinary tensors (see ``rgrad/func/_transforms.py``), so only vmap wraps.
    """
    from rgrad.func._batched_tensor import BatchedTensor

    while isinstance(tensor, BatchedTensor):
        tensor = tensor._value
        if not recurse:
            break
    return tensor

__all__ = ["vmap", "grad", "grad_and_value", "vjp", "jvp", "linearize", "jacrev", "jacfwd", "hessian",
           "functional_call", "debug_unwrap"]
