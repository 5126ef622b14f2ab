"""rgrad.backends.cuda: ``matmul.allow_tf32`` (cuBLAS TF32 tensor cores for float32
products; False by default, as torch's)."""

from rgrad import _C


class _Matmul:
    @property
    def allow_tf32(self) -> bool:
        return _C._cuda_get_allow_tf32()

    @allow_tf32.setter
    def allow_tf32(self, on: bool) -> None:
        _C._cuda_set_allow_tf32(bool(on))


matmul = _Matmul()
