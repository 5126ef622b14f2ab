"""Handles returned by ``register_hook``."""


class RemovableHandle:
    """A handle which provides the capability to remove a hook."""

    def __init__(self, tensor, hook_id: int) -> None:
        # What the hook is removed from: a tensor (a strong reference: Python wrappers of
        # one tensor come and go, the hook stays), or a node's hook owner (which holds its
        # node weakly).
        self._tensor = tensor
        self.id = hook_id

    def remove(self) -> None:
        """Removes the hook (a no-op if it was already removed or the tensor is gone)."""
        self._tensor._remove_hook(self.id)

    def __enter__(self) -> "RemovableHandle":
        return self

    def __exit__(self, *args) -> None:
        self.remove()
