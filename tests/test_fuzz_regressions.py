"""Divergences from torch 2.15 found by the random-program fuzzer (docs/fuzzing.md), one row
each: a program over the name `torch` and what torch 2.15 does with it.

Each program runs with `torch` bound to rgrad and must end as the row says: raising the
exception type with a message that starts as written, or printing the same last line. Where
torch is installed, the same rows run on torch too, so that a row cannot drift from the
reference it records.
"""

import importlib.util

import pytest

import rgrad

HAVE_TORCH = importlib.util.find_spec("torch") is not None


class Raises:
    def __init__(self, exc: type, message: str) -> None:
        self.exc, self.message = exc, message

    def __repr__(self) -> str:
        return f"{self.exc.__name__}({self.message!r})"


# (id, program, expected): the program's last line is an expression whose repr (with the
# module named `torch`) is compared, unless `expected` is a Raises.
ROWS = [
    # sgn's node keeps its result as torch's does (seed 1128): writing to it in place makes
    # backward fail
    ("sgn_result_written_in_place",
     "x = torch.tensor([-1.5, 0.0, 2.0], requires_grad=True)\ny = torch.sgn(x)\ny.rad2deg_()\n"
     "((x * 2).sum() + y.sum()).backward()",
     Raises(RuntimeError, "one of the variables needed for gradient computation has been modified by an inplace")),
    # the binary op table's nodes (seed 5): atan2's 1/(a² + b²) is 0 where both are 0; the
    # node saves the operands as given (a bool one makes the formula fail, as torch's);
    # hypot saves an operand only when its gradient is needed
    ("atan2_at_origin", "x = torch.tensor([0., 2.], requires_grad=True)\ntorch.atan2(x, x).sum().backward()\nx.grad",
     "tensor([0., 0.])"),
    ("atan2_origin_two_leaves",
     "a = torch.zeros(1, requires_grad=True)\nb = torch.zeros(1, requires_grad=True)\n"
     "torch.atan2(a, b).sum().backward()\n(a.grad, b.grad)", "(tensor([0.]), tensor([-0.]))"),
    ("logaddexp_bool_operand_backward",
     "x = torch.tensor([1., 2.], requires_grad=True)\ny = x.logaddexp(torch.tensor([False, True]))\ny.sum().backward()",
     Raises(NotImplementedError, "Subtraction, the `-` operator, with a bool tensor is not supported")),
    ("atan2_bool_operand_backward",
     "x = torch.tensor([1., 2.], requires_grad=True)\ny = torch.tensor([True, False]).atan2(x)\ny.sum().backward()",
     Raises(NotImplementedError, "Negation, the `-` operator, on a bool tensor is not supported")),
    ("hypot_saves_only_what_it_needs",
     "x = torch.tensor([3.], requires_grad=True)\nc = torch.tensor([4.])\ny = torch.hypot(x, c)\nc.mul_(2)\n"
     "y.backward()\nx.grad", "tensor([0.6000])"),
    # seed 1: relu_/neg_ refuse a bool tensor before the overlap check, as their meta
    # functions do; abs_'s kernel error comes after it
    ("relu_bool_expanded", "torch.tensor([True]).expand(2).relu_()",
     Raises(NotImplementedError, "Boolean inputs not supported for relu")),
    ("neg_bool_expanded", "torch.tensor([True]).expand(2).neg_()",
     Raises(NotImplementedError, "Negation, the `-` operator, on a bool tensor is not supported")),
    ("abs_bool_expanded", "torch.tensor([True]).expand(2).abs_()",
     Raises(RuntimeError, "unsupported operation: more than one element of the written-to tensor")),
    ("xlogy_of_negative_zero", "torch.xlogy(torch.tensor([-0.0]), torch.tensor([2.0])).digamma()", "tensor([-inf])"),
    ("xlogy_nan_number_masks_zeros",
     "x = torch.tensor([1.5, 0.0, -2.0], requires_grad=True)\nx.xlogy(float('nan')).sum().backward()\nx.grad",
     "tensor([nan, 0., nan])"),
    ("xlogy_nan_tensor_does_not",
     "x = torch.tensor([1.5, 0.0, -2.0], requires_grad=True)\ntorch.xlogy(x, torch.tensor(float('nan'))).sum().backward()\nx.grad",
     "tensor([nan, nan, nan])"),
    ("xlogy_saves_both",
     "x = torch.tensor([3.], requires_grad=True)\nc = torch.tensor([4.])\ny = torch.xlogy(x, c)\nc.mul_(2)\n"
     "y.backward()",
     Raises(RuntimeError, "one of the variables needed for gradient computation has been modified by an inplace")),
    # in-place writes through views of leaves (torch's check_inplace)
    ("view_of_leaf_view", "x = torch.tensor([1., 2., 3., 4.]).reshape(2, 2).requires_grad_()\nx[0:1] = 5.",
     Raises(RuntimeError, "a view of a leaf Variable that requires grad is being used in an in-place")),
    ("leaf_view_itself", "x = torch.tensor([1., 2., 3., 4.]).reshape(2, 2).requires_grad_()\nx.add_(1)",
     Raises(RuntimeError, "a view of a leaf Variable that requires grad is being used in an in-place")),
    ("composite_results_are_not_views",
     "x = torch.tensor([[1., 2.], [3., 4.]], requires_grad=True)\nv = torch.ones(2, requires_grad=True) * 1\n"
     "[r._base is None for r in (x.logsumexp(0), v @ v, v @ x, x @ v, torch.ones(2, 2, 2) @ v)]",
     "[True, True, True, True, True]"),
    ("in_place_on_logsumexp", "x = torch.tensor([1., 2.], requires_grad=True)\nx.logsumexp(0).div_(2).grad_fn.name()",
     "'DivBackward0'"),
    # multi-output views
    ("unbind_output_in_place", "y = torch.zeros(2, 2, requires_grad=True) * 1\ny.unbind(0)[1].zero_()",
     Raises(RuntimeError, "Output 1 of Unbind is a view and is being modified inplace. This view is the output of a "
            "function that returns multiple views.")),
    ("split_output_in_place", "y = torch.zeros(4, 2, requires_grad=True) * 1\ny.split(2)[1].mul_(2)",
     Raises(RuntimeError, "Output 1 of Split is a view")),
    ("split_with_sizes_output", "y = torch.zeros(4, 2, requires_grad=True) * 1\ny.split([1, 3])[1].zero_()",
     Raises(RuntimeError, "Output 1 of SplitWithSizes is a view")),
    ("view_of_unbind_output", "y = torch.zeros(4, 2, requires_grad=True) * 1\ny.unbind(0)[1][0:1].zero_()",
     Raises(RuntimeError, "Output 0 of Slice is a view")),
    ("unbind_of_leaf", "x = torch.zeros(4, 2, requires_grad=True)\nx.unbind(0)[1].zero_()",
     Raises(RuntimeError, "Output 1 of Unbind is a view")),
    ("unbind_plain_operand_requires_grad",
     "w = torch.zeros(4, 2)\nw.unbind(0)[1].add_(torch.ones(2, requires_grad=True))",
     Raises(RuntimeError, "A view was created in no_grad mode and is being modified inplace with grad mode enabled. "
            "This view is the output of a function that returns multiple views.")),
    ("unbind_without_grad_is_writable", "z = torch.zeros(4, 2)\nz.unbind(0)[1].fill_(3)\nz.sum()", "tensor(6.)"),
    # saved values modified in place
    ("x_times_x_in_place", "x = torch.tensor([1., 2.], requires_grad=True) * 1\nx *= x\nx.sum().backward()",
     Raises(RuntimeError, "one of the variables needed for gradient computation has been modified by an inplace "
            "operation: [torch.FloatTensor [2]], which is output 0 of Mul, is at version 1; expected version 0")),
    ("promoted_input_modified", "a = torch.tensor([-2, 6])\nb = torch.tensor([0.5], requires_grad=True)\n"
     "c = torch.div(a, b)\na.zero_()\nc.sum().backward()",
     Raises(RuntimeError, "one of the variables needed for gradient computation has been modified by an inplace")),
    ("result_of_in_place_modified", "x = torch.tensor([1.5], dtype=torch.float64, requires_grad=True) * 1\n"
     "y = x.tanh_()\ny[y > 0] = 0\ny.sum().backward()",
     Raises(RuntimeError, "one of the variables needed for gradient computation has been modified by an inplace")),
    ("result_of_in_place_kept", "x0 = torch.tensor([1.5], dtype=torch.float64, requires_grad=True)\nx = x0 * 1\n"
     "y = x.exp_()\ny.sum().backward()\nx0.grad", "tensor([4.4817], dtype=torch.float64)"),
    ("self_saved_as_original", "a = torch.tensor([1., 2.], requires_grad=True)\nb = a * 1\nb.mul_(a)\n"
     "b.sum().backward()\na.grad", "tensor([2., 4.])"),
    # overlapping operands
    ("copy_from_a_partly_overlapping_view", "x = torch.tensor(1.875)\nv = x.view(-1)\nv.copy_(x)",
     Raises(RuntimeError, "unsupported operation: some elements of the input tensor and the written-to tensor refer to "
            "a single memory location.")),
    ("add_shifted_view", "x = torch.arange(4.)\nx[1:].add_(x[:3])",
     Raises(RuntimeError, "unsupported operation: some elements of the input tensor")),
    ("add_same_view_is_fine", "x = torch.arange(4.)\nx[1:].add_(x[1:])\nx", "tensor([0., 2., 4., 6.])"),
    # writing values that require grad into int/bool tensors
    ("copy_grad_into_bool", "torch.zeros(0, 2, dtype=torch.bool).copy_(torch.zeros(0, 2, requires_grad=True))"
     ".requires_grad", "False"),
    ("setitem_grad_into_int", "b = torch.zeros(2, dtype=torch.int64)\nb[0] = torch.tensor(2., requires_grad=True)\n"
     "(b, b.requires_grad)", "(tensor([2, 0]), False)"),
    # clamp's result type and checked number conversions
    ("clamp_bool_by_float", "torch.tensor([True]).clamp(min=0.5).dtype", "torch.float32"),
    ("clamp_int_by_float", "torch.tensor([1]).clamp(min=-2.5, max=1)", "tensor([1.])"),
    ("clamp_bool_by_int", "torch.tensor([True, False]).clamp(min=0)", "tensor([1, 0])"),
    ("clamp_bool_by_bool", "torch.tensor([True]).clamp(min=True)",
     Raises(NotImplementedError, "\"clamp_min_scalar_cpu\" not implemented for 'Bool'")),
    ("clamp_in_place_promotes", "torch.tensor([True]).clamp_(min=0)",
     Raises(RuntimeError, "result type Long can't be cast to the desired output type")),
    ("clamp_tensor_bound_with_number", "torch.tensor([1, 2]).clamp(min=1.5, max=torch.tensor(2))",
     "tensor([1.5000, 2.0000])"),
    ("setitem_inf_into_int", "x = torch.zeros(2, dtype=torch.int64)\nx[0:2:2] = float('inf')",
     Raises(RuntimeError, "value cannot be converted to type int64_t without overflow")),
    ("fill_nan_into_int", "torch.tensor([1]).fill_(float('nan'))",
     Raises(RuntimeError, "value cannot be converted to type int64_t without overflow")),
    ("fill_2_63_into_int", "torch.tensor([1]).fill_(float(2 ** 63))",
     Raises(RuntimeError, "value cannot be converted to type int64_t without overflow")),
    ("fill_huge_into_float32", "torch.tensor([1.]).fill_(1e300)",
     Raises(RuntimeError, "value cannot be converted to type float without overflow")),
    ("fill_inf_into_float32", "torch.tensor([1.]).fill_(float('inf'))", "tensor([inf])"),
    ("fill_nan_into_bool", "torch.tensor([True]).fill_(float('nan'))", "tensor([True])"),
    ("masked_fill_inf_into_int", "torch.tensor([1]).masked_fill_(torch.tensor([True]), float('inf'))",
     Raises(RuntimeError, "value cannot be converted to type int64_t without overflow")),
    ("full_keeps_big_ints", "torch.full((1,), 2 ** 60 + 1).item() - 2 ** 60", "1"),
    # dims checked first, empty inputs returned
    ("log_softmax_bool_bad_dim", "torch.tensor([True, False]).log_softmax(4)",
     Raises(IndexError, "Dimension out of range (expected to be in range of [-1, 0], but got 4)")),
    ("softmax_empty_bool", "torch.zeros(0, dtype=torch.bool).softmax(0)", "tensor([], dtype=torch.bool)"),
    ("softmax_int", "torch.tensor([1, 2]).softmax(0)",
     Raises(NotImplementedError, "\"softmax_lastdim_kernel_impl\" not implemented for 'Long'")),
    ("fmod_empty_by_zero", "torch.zeros(0, dtype=torch.int64).fmod(False)", "tensor([], dtype=torch.int64)"),
    ("remainder_empty_by_zero", "torch.tensor([1]).remainder(torch.zeros(0, dtype=torch.int64))",
     "tensor([], dtype=torch.int64)"),
    ("stack_dim_first", "torch.stack([torch.zeros(2, 3), torch.zeros(3, 2)], 7)",
     Raises(IndexError, "Dimension out of range (expected to be in range of [-3, 2], but got 7)")),
    ("flatten_0d_dims", "torch.tensor(1.).flatten(3, 0)",
     Raises(IndexError, "Dimension out of range (expected to be in range of [-1, 0], but got 3)")),
    ("flatten_0d", "torch.tensor(1.).flatten(-1, 0)", "tensor([1.])"),
    ("amin_empty_dim_before_repeats", "torch.zeros(0, 2).amin((0, 0))",
     Raises(IndexError, "amin(): Expected reduction dim 0 to have non-zero size.")),
    ("amax_dims_in_order", "torch.zeros(0, 2).amax((0, 5))",
     Raises(IndexError, "amax(): Expected reduction dim 0 to have non-zero size.")),
    ("amax_repeats", "torch.zeros(0, 2).amax((1, 1))",
     Raises(RuntimeError, "dim 1 appears multiple times in the list of dims")),
    # indexing
    ("index_select_dim1", "torch.zeros(2, 2, 3).index_select(1, torch.tensor([5]))",
     Raises(RuntimeError, "INDICES element is out of DATA bounds, id=5 axis_dim=2")),
    ("index_select_empty_input", "torch.zeros(0, 2, 3).index_select(2, torch.tensor([-1]))",
     Raises(RuntimeError, "INDICES element is out of DATA bounds, id=-1 axis_dim=3")),
    ("index_select_empty_axis", "torch.zeros(0, 2).index_select(0, torch.tensor([1]))",
     Raises(RuntimeError, "index_select(): self indexing axis dim should be positive")),
    ("index_select_dim2", "torch.zeros(2, 2, 3).index_select(2, torch.tensor([5]))",
     Raises(IndexError, "index out of range in self")),
    ("index_that_visits_nothing", "torch.zeros(0, 1, 4)[None, torch.tensor([0]), torch.tensor([False])].shape",
     "torch.Size([1, 0, 4])"),
    ("index_put_size_0_dim_first",
     "torch.zeros(0, dtype=torch.bool).index_put_((torch.tensor([0]),), torch.tensor(4.25), accumulate=True)",
     Raises(IndexError, "index is out of bounds for dimension with size 0")),
    ("index_put_values_shape_before_dtype",
     "torch.zeros(2, dtype=torch.bool).index_put_((torch.tensor([5]),), torch.tensor([4.25, 1.0, 3.0]))",
     Raises(RuntimeError, "shape mismatch: value tensor of shape [3] cannot be broadcast to indexing result of shape "
            "[1]")),
    ("index_put_dtype_before_bounds",
     "torch.zeros(2, dtype=torch.bool).index_put_((torch.tensor([5]),), torch.tensor(4.25))",
     Raises(RuntimeError, "Index put requires the source and destination dtypes match, got Bool for the destination "
            "and Float for the source.")),
    ("setitem_mask_checked_before_leaf",
     "x = torch.tensor([[1., 2., 3.]], requires_grad=True)\nx[-1::2, torch.tensor([True, False, True, False])] = 0.",
     Raises(IndexError, "The shape of the mask [4] at index 0 does not match the shape of the indexed tensor [1, 3] "
            "at index 1")),
    ("setitem_bounds_after_leaf", "x = torch.tensor([[1., 2., 3.]], requires_grad=True)\nx[:, torch.tensor([5])] = 0.",
     Raises(RuntimeError, "a leaf Variable that requires grad is being used in an in-place operation.")),
    ("sub_bool_number_on_leaf", "x = torch.tensor(1.5, requires_grad=True)\nx.sub_(False)",
     Raises(RuntimeError, "a leaf Variable that requires grad is being used in an in-place operation.")),
    ("setitem_lone_mask_number_checks_mask_first",
     "x = torch.zeros(3, 2, requires_grad=True)\nx[:, torch.tensor([True, False, True])] = 1.",
     Raises(IndexError, "The shape of the mask [3] at index 0 does not match the shape of the indexed tensor [3, 2] at "
            "index 1")),
    ("setitem_mask_with_tensor_value_checks_leaf_first",
     "x = torch.zeros(3, 2, requires_grad=True)\nx[:, torch.tensor([True, False, True])] = torch.tensor(1.)",
     Raises(RuntimeError, "a leaf Variable that requires grad is being used in an in-place operation.")),
    ("setitem_float_index_after_leaf", "x = torch.zeros(3, 2, requires_grad=True)\nx[:, torch.tensor([0.5])] = 1.",
     Raises(RuntimeError, "a leaf Variable that requires grad is being used in an in-place operation.")),
    ("setitem_number_into_empty_dim", "x = torch.zeros(0, 2)\nx[torch.tensor([0]), -2:2] = 1.",
     Raises(RuntimeError, "setStorage: sizes [1, 2], strides [0, 1], storage offset 0, and itemsize 4 requiring a "
            "storage size of 8 are out of bounds for storage of size 0")),
    ("setitem_tensor_into_empty_dim", "x = torch.zeros(0, 2)\nx[torch.tensor([0])] = torch.tensor(1.)",
     Raises(IndexError, "index is out of bounds for dimension with size 0")),
    ("setitem_number_into_empty_dim_3d", "x = torch.zeros(0, 2, 3, dtype=torch.float64)\nx[torch.tensor([0])] = 1.",
     Raises(RuntimeError, "setStorage: sizes [1, 2, 3], strides [0, 3, 1], storage offset 0, and itemsize 8 requiring "
            "a storage size of 48")),
    # elementwise outputs keep the inputs' memory format (TensorIterator's rule)
    ("strides_of_elementwise_outputs",
     "x = torch.arange(6.).reshape(2, 3).t()\nc = torch.ones(3, 2)\n"
     "[t.stride() for t in (x + 1, x + x, x.exp(), x > 0, x + c, c + x, x + torch.ones(2), x ** 2, -x, x.sigmoid(), "
     "x.relu(), x.clamp(0, 1), torch.where(x > 0, x, 0.), x.clone(), x.to(torch.float64), x.bool(), x.masked_fill(x > 2, 0), "
     "x.contiguous(), x.softmax(0), x.sum(0, keepdim=True))]",
     "[(1, 3), (1, 3), (1, 3), (1, 3), (1, 3), (2, 1), (1, 3), (1, 3), (1, 3), (1, 3), (1, 3), (1, 3), (1, 3), (1, 3), "
     "(1, 3), (1, 3), (2, 1), (2, 1), (2, 1), (2, 1)]"),
    ("strides_of_3d_permuted", "y = torch.arange(24.).reshape(2, 3, 4).permute(2, 0, 1)\n"
     "[t.stride() for t in (y + 1, y.clone(), y + torch.ones(3), torch.ones(4, 1, 1) + y, y[:, :, ::2] + 1)]",
     "[(1, 12, 4), (1, 12, 4), (1, 12, 4), (1, 12, 4), (1, 8, 4)]"),
    ("view_of_a_permuted_result_refused", "x = torch.arange(6.).reshape(2, 3).t()\n(x + 1).view(6)",
     Raises(RuntimeError, "view size is not compatible with input tensor's size and stride")),
    ("reshape_of_a_permuted_result_copies", "x = torch.arange(6.).reshape(2, 3).t()\ny = x * 2\nz = y.reshape(6)\n"
     "z.fill_(0)\ny.sum()", "tensor(30.)"),
    ("grad_through_permuted_results", "x = torch.arange(6.).reshape(2, 3).t().requires_grad_()\n"
     "y = (x.exp() * 2 + x ** 2).tanh()\ny.sum().backward()\n(x.grad.shape, x.grad.stride(), round(x.grad.sum().item(), 4))",
     "(torch.Size([3, 2]), (1, 3), 0.1414)"),
    ("sub_bool_multi_output_view_with_grad_operand",
     "v = torch.tensor([True]).chunk(1, 0)[0]\nv.sub_(torch.tensor([1.5], requires_grad=True))",
     Raises(RuntimeError, "A view was created in no_grad mode and is being modified inplace with grad mode enabled.")),
    ("copy_expanded_onto_itself", "v = torch.tensor([[1, 2]]).expand(3, 2)\nv.copy_(v).shape", "torch.Size([3, 2])"),
    ("masked_setitem_tensor_number_overflow",
     "x = torch.ones(1, 2, dtype=torch.int64)\nx[torch.tensor([True]), 1::2] = torch.tensor(float('inf'))",
     Raises(RuntimeError, "value cannot be converted to type int64_t without overflow")),
    ("matmul_folds_a_strided_batch_into_a_copy",
     "a = torch.arange(16.).reshape(8, 2, 1)[::2]\nb = torch.ones(1, 3, requires_grad=True)\nr = a @ b\n"
     "a.zero_()\nr.sum().backward()\n(r.grad_fn.name(), b.grad)", "('UnsafeViewBackward0', tensor([[52., 52., 52.]]))"),
    ("matmul_folds_a_contiguous_batch_into_a_view",
     "a = torch.arange(8.).reshape(4, 2, 1)\nb = torch.ones(1, 3, requires_grad=True)\nr = a @ b\na.zero_()\n"
     "r.sum().backward()",
     Raises(RuntimeError, "one of the variables needed for gradient computation has been modified by an inplace")),
    ("pow_by_false_takes_the_general_formula",
     "x = torch.tensor([float('nan'), 0., 2.], requires_grad=True)\nx.pow(False).sum().backward()\nx.grad",
     "tensor([nan, nan, 0.])"),
    ("pow_by_zero_is_zero_gradient",
     "x = torch.tensor([float('nan'), 0., 2.], requires_grad=True)\nx.pow(0).sum().backward()\nx.grad",
     "tensor([0., 0., 0.])"),
    ("masked_setitem_into_multi_output_view",
     "v = torch.tensor([False, True, True]).chunk(2, 0)[1]\nv[v > 0] = torch.tensor(-3.0, requires_grad=True)",
     Raises(RuntimeError, "A view was created in no_grad mode and is being modified inplace with grad mode enabled.")),
    ("stale_view_of_a_base_without_history",
     "v0 = torch.arange(12.).reshape(6, 2)[::2].requires_grad_()\nv3 = v0[0:, ...]\nv0.detach()[0, 0] = 5.\n"
     "((v0 * 1).sum() + (v3 * 1).sum()).backward()\n(v0.grad.tolist(), v3.is_leaf)",
     "([[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]], False)"),
    ("backward_through_a_write_into_an_expanded_view",
     "x = torch.ones(2, 1, requires_grad=True) * 1\nv = x.expand(2, 3)\nv.fill_(0)\nx.sum().backward()",
     Raises(RuntimeError, "unsupported operation: more than one element of the written-to tensor refers to a single "
            "memory location.")),
    # products of nothing, cat
    ("bmm_of_nothing_mixed_dtypes", "torch.bmm(torch.zeros(2, 0, 1), torch.zeros(2, 1, 3, dtype=torch.int64))",
     "tensor([], size=(2, 0, 3), dtype=torch.int64)"),
    ("bmm_inner_0_mixed_dtypes",
     "torch.bmm(torch.zeros(1, 2, 0, dtype=torch.float64), torch.zeros(1, 0, 2, dtype=torch.int64))",
     "tensor([[[0, 0],\n         [0, 0]]])"),
    ("bmm_of_nothing_autograd", "torch.bmm(torch.zeros(2, 0, 1, requires_grad=True), torch.zeros(2, 1, 3, "
     "dtype=torch.int64))", Raises(RuntimeError, "Autograd not support dtype: Long")),
    ("mm_of_nothing_mixed_dtypes", "torch.mm(torch.zeros(0, 2, dtype=torch.float64), torch.zeros(2, 3, "
     "dtype=torch.int64))", Raises(RuntimeError, "expected m1 and m2 to have the same dtype, but got: double != long int")),
    ("addmm_of_nothing_bool", "torch.addmm(torch.tensor([True, False, True]), torch.zeros(0, 3, dtype=torch.bool), "
     "torch.zeros(3, 3, dtype=torch.bool))", "tensor([], size=(0, 3), dtype=torch.bool)"),
    ("empty_bool_matmul", "torch.zeros(0, 1, dtype=torch.bool).matmul(torch.tensor([False]))",
     "tensor([], dtype=torch.bool)"),
    ("bool_matmul_inner_0", "torch.zeros(2, 0, dtype=torch.bool) @ torch.zeros(0, 2, dtype=torch.bool)",
     "tensor([[False, False],\n        [False, False]])"),
    ("bool_mm", "torch.zeros(2, 1, dtype=torch.bool) @ torch.zeros(1, 3, dtype=torch.bool)",
     Raises(NotImplementedError, "\"addmm_impl_cpu_\" not implemented for 'Bool'")),
    ("bool_bmm", "torch.bmm(torch.zeros(1, 2, 2, dtype=torch.bool), torch.zeros(1, 2, 2, dtype=torch.bool))",
     Raises(NotImplementedError, "\"bmm\" not implemented for 'Bool'")),
    ("bool_dot", "torch.zeros(0, dtype=torch.bool) @ torch.zeros(0, dtype=torch.bool)",
     Raises(NotImplementedError, "\"dot\" not implemented for 'Bool'")),
    ("cat_keeps_legacy_empty_inputs",
     "torch.cat([torch.tensor([True, True]), torch.zeros(0, dtype=torch.float64, requires_grad=True)]).requires_grad",
     "True"),
    ("cat_of_empties_is_a_new_tensor", "e = torch.zeros(0, requires_grad=True)\nr = torch.cat([e, e])\n"
     "r.sum().backward()\n(r.is_leaf, r.grad_fn.name(), e.grad)", "(False, 'CatBackward0', tensor([]))"),
    ("cat_legacy_empty_gradient", "e = torch.zeros(0, requires_grad=True)\nx = torch.ones(2, 2, requires_grad=True)\n"
     "torch.cat([x, e], 1).sum().backward()\n(e.grad, x.grad.shape)", "(tensor([]), torch.Size([2, 2]))"),
    ("pow_bool_exponent_backward",
     "x = torch.tensor([1.5, 2.], requires_grad=True)\nx.pow(torch.tensor([True, False])).sum().backward()",
     Raises(NotImplementedError, "Subtraction, the `-` operator, with a bool tensor is not supported.")),
    # fuzzer seed 2
    ("copy_slices_zeroes_a_nan_gradient",
     "x = torch.tensor([[0.001, 100.], [-float('inf'), 3.67]], requires_grad=True)\ny = x * 1\ny[0] = 2\n"
     "y.std(0).sum().backward()\nx.grad[0].tolist()", "[0.0, 0.0]"),
    ("matmul_folds_size_one_batch", "a = torch.tensor([[[1, 2], [3, 4]]]).transpose(-1, -2)\n"
     "torch.matmul(a, torch.ones(2, 0, dtype=torch.bool))",
     Raises(RuntimeError, "expected m1 and m2 to have the same dtype, but got: long int != bool")),
    ("matmul_folds_size_one_batch_grad_fn", "a = torch.ones(1, 2, 2).transpose(-1, -2).requires_grad_()\n"
     "torch.matmul(a, torch.ones(2, 3)).grad_fn.next_functions[0][0].name()", "'MmBackward0'"),
    ("bmm_bool_first_small", "torch.bmm(torch.ones(2, 2, 2, dtype=torch.bool), torch.ones(2, 2, 2))",
     Raises(NotImplementedError, "\"bmm\" not implemented for 'Bool'")),
    ("bmm_dtypes_small", "torch.bmm(torch.ones(2, 2, 2, dtype=torch.int64), torch.ones(2, 2, 2))",
     Raises(RuntimeError, "expected scalar type Long but found Float")),
    ("bmm_dtypes_large_float_second", "torch.bmm(torch.ones(2, 20, 1, dtype=torch.int64), torch.ones(2, 1, 20))",
     Raises(RuntimeError, "expected scalar type Float but found Long")),
    ("bmm_dtypes_large_int_second", "torch.bmm(torch.ones(2, 20, 1), torch.ones(2, 1, 20, dtype=torch.int64))",
     Raises(RuntimeError, "expected m1 and m2 to have the same dtype, but got: float != long int")),
    ("bmm_bool_large", "torch.bmm(torch.ones(2, 20, 1, dtype=torch.bool), torch.ones(2, 1, 20, dtype=torch.bool))",
     Raises(NotImplementedError, "\"addmm_impl_cpu_\" not implemented for 'Bool'")),
    ("matmul_bool_batch_unfolded",
     "a = torch.ones(3, 2, 3, 3, dtype=torch.bool).transpose(-1, -2)\n"
     "torch.matmul(a, torch.ones(3, 1, dtype=torch.int64))",
     Raises(NotImplementedError, "\"bmm\" not implemented for 'Bool'")),
    ("int_unbind_outputs_are_writable",
     "v = torch.tensor([6, 1, 2]).unbind(-1)[1]\nv[...] = torch.tensor(0.5, requires_grad=True)\nv", "tensor(0)"),
    ("int_chunk_outputs_are_not",
     "v = torch.tensor([6, 1, 2]).chunk(2)[1]\nv[...] = torch.tensor(0.5, requires_grad=True)",
     Raises(RuntimeError, "A view was created in no_grad mode and is being modified inplace with grad mode enabled.")),
    # (seed 12, case 3648: unbind's int and bool outputs are multi-output views too; only
    # copy_, and so `v[...] = t` of v's sizes, checks nothing for such a target)
    ("bool_unbind_output_sub_by_grad_operand",
     "v = torch.tensor([False, True] * 12).reshape(6, 4)[::2].unbind(-2)[1]\n"
     "v.sub_(torch.tensor(2.1875, requires_grad=True))",
     Raises(RuntimeError, "A view was created in no_grad mode and is being modified inplace with grad mode enabled.")),
    ("int_unbind_output_mul_by_grad_operand",
     "torch.tensor([6, 1, 2]).unbind(-1)[1].mul_(torch.tensor(0.5, requires_grad=True))",
     Raises(RuntimeError, "A view was created in no_grad mode and is being modified inplace with grad mode enabled.")),
    ("int_unbind_output_fill_with_grad_value",
     "torch.tensor([6, 1, 2]).unbind(-1)[1].fill_(torch.tensor(0.5, requires_grad=True))",
     Raises(RuntimeError, "A view was created in no_grad mode and is being modified inplace with grad mode enabled.")),
    ("int_unbind_output_masked_fill_with_grad_value",
     "torch.tensor([6, 1, 2]).unbind(-1)[1].masked_fill_(torch.tensor(True), torch.tensor(0.5, requires_grad=True))",
     Raises(RuntimeError, "A view was created in no_grad mode and is being modified inplace with grad mode enabled.")),
    ("int_unbind_output_slice_setitem_is_a_fill",
     "torch.tensor([[6, 1, 2]]).unbind(0)[0][0:2] = torch.tensor(0.5, requires_grad=True)",
     Raises(RuntimeError, "A view was created in no_grad mode and is being modified inplace with grad mode enabled.")),
    ("int_unbind_output_view_clamp_by_grad_bound",
     "torch.tensor([[6, 1, 2]]).unbind(0)[0][1:].clamp_(min=torch.tensor(0.5, requires_grad=True))",
     Raises(RuntimeError, "A view was created in no_grad mode and is being modified inplace with grad mode enabled.")),
    ("int_unbind_output_copy_from_grad_tensor",
     "v = torch.tensor([6, 1, 2]).unbind(-1)[1]\nv.copy_(torch.tensor(7.5, requires_grad=True))\nv", "tensor(7)"),
    ("int_unbind_output_written_without_grad_operands",
     "v = torch.tensor([6, 1, 2]).unbind(-1)[1]\nv.add_(torch.tensor(1))\nv.zero_()\nv.fill_(4)\nv", "tensor(4)"),
    ("scalar_setitem_into_empty_backward",
     "x = torch.zeros(2, 4, 2, requires_grad=True)\ny = x[-1:-1, 0::2, torch.tensor([], dtype=torch.int64)]\n"
     "y[torch.tensor([0]), -1:2:2, ...] = -2\ny.sum().backward()\nx.grad.shape", "torch.Size([2, 4, 2])"),
    ("index_result_keeps_memory_order",
     "x = torch.zeros(2, 3, 2).transpose(-1, -2)\n"
     "[x[torch.tensor([1, 0])].stride(), x[:, torch.tensor([1, 0])].stride(), x[..., torch.tensor([2, 0])].stride()]",
     "[(6, 1, 2), (6, 3, 1), (4, 2, 1)]"),
    ("index_result_view_refused", "x = torch.zeros(2, 3, 2).transpose(-1, -2)[torch.tensor([0, 1])]\nx.view(4, -1)",
     Raises(RuntimeError, "view size is not compatible with input tensor's size and stride")),
    ("clone_of_non_dense_keeps_order",
     "a = torch.zeros(4, 6).t()[::2]\nb = torch.zeros(3, 1, 2).transpose(0, 2).expand(2, 5, 3)\n"
     "[a.clone().stride(), a.double().stride(), b.clone().stride(), (b + torch.zeros(3, dtype=torch.float64)).stride()]",
     "[(1, 3), (1, 3), (1, 2, 10), (1, 2, 10)]"),
    ("compare_after_promotion_keeps_order",
     "b = torch.ones(2, 3, 3, dtype=torch.bool).transpose(-1, -2).expand(3, 2, 3, 3)\n"
     "(b <= torch.zeros(1, 3, 1)).stride()", "(18, 9, 1, 3)"),
    # fuzzer seeds 0, 1 and 3 after the op table
    ("exp_of_permuted_bool_keeps_its_format", "(torch.zeros(2, 3, 4).transpose(-1, -2) < 1).exp().stride()",
     "(12, 1, 4)"),
    ("number_setitem_into_empty_narrow", "v = torch.zeros(2, 4, 1, dtype=torch.bool).narrow(0, 0, 0)\n"
     "v[torch.tensor([0]), ..., ...] = True",
     Raises(IndexError, "index 0 is out of bounds for dimension 0 with size 0")),
    ("number_setitem_past_the_storage", "v = torch.zeros(4, 6)[4:]\nv[torch.tensor([0])] = 2.5",
     Raises(RuntimeError, "setStorage: sizes [1, 6], strides [0, 1], storage offset 24, and itemsize 4 requiring "
            "a storage size of 120 are out of bounds for storage of size 96")),
    ("bool_add_with_negative_alpha_is_or", "torch.tensor([False, True]).add(torch.tensor([True]), alpha=-1)",
     "tensor([True, True])"),
    ("comparison_reads_no_history_of_a_stale_view",
     "x = torch.zeros(1, 2, requires_grad=True) * 1\nv = x.chunk(2, 0)[0]\nx.sigmoid_()\n"
     "v.lt(torch.zeros(1, 2, dtype=torch.float64))", "tensor([[False, False]])"),
    ("repeat_reports_the_result_size", "torch.ones(2, 3).repeat(-1, 1)",
     Raises(RuntimeError, "Trying to create tensor with negative dimension -2: [-2, 3]")),
    ("repeat_of_an_empty_dim_by_a_negative_count", "torch.ones(0, 3).repeat(-1, 1).shape", "torch.Size([0, 3])"),
    # fuzzer seed 4 (after the op table)
    ("gradient_through_a_stale_expanded_view_adds_up",
     "v0 = torch.tensor([1., 2., 3., 4.], requires_grad=True)\nv1 = (v0 * 1).reshape(2, 2)\n"
     "v3 = v1.expand(3, 2, 2)\nv1[1, 0] = -2\n(v3 * torch.arange(12.).reshape(3, 2, 2)).sum().backward()\nv0.grad",
     "tensor([12., 15.,  0., 21.])"),
    ("setitem_checks_the_mask_before_the_value", "v = torch.tensor([-2])\nv[torch.tensor([True, True]), None] = float('nan')",
     Raises(IndexError, "The shape of the mask [2] at index 0 does not match the shape of the indexed tensor [1, 1]")),
    ("erfinv_saves_its_input", "x = torch.tensor([0.5, -0.25], requires_grad=True)\ny = torch.erfinv(x)\ny.fill_(1)\n"
     "y.sum().backward()\n[round(v, 6) for v in x.grad.tolist()]", "[0.0, 0.0]"),
    ("erfinv_near_one", "torch.erfinv(torch.tensor([0.9999999999999999, -0.9999999999990485], dtype=torch.float64))",
     "tensor([ 5.8636, -5.0469], dtype=torch.float64)"),
    ("setitem_converts_the_number_before_the_index_dtype_check",
     "v = torch.tensor([], dtype=torch.int64)\nv[torch.tensor([]),] = float('nan')",
     Raises(RuntimeError, "value cannot be converted to type int64_t without overflow")),
]


def run(module, program: str):
    *body, last = program.split("\n")
    scope = {"torch": module}
    exec("\n".join(body), scope)
    try:
        code = compile(last, "<row>", "eval")
    except SyntaxError:  # an assignment: nothing to print
        exec(last, scope)
        return None
    return eval(code, scope)


def check(module, name: str, program: str, expected) -> None:
    if isinstance(expected, Raises):
        with pytest.raises(expected.exc) as info:
            run(module, program)
        message = str(info.value).replace(f"[{name}.", "[torch.")
        assert message.startswith(expected.message), message
    else:
        got = repr(run(module, program)).replace(f"{name}.", "torch.")
        assert got == expected


@pytest.mark.parametrize("program, expected", [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_rgrad_does_what_torch_2_15_does(program, expected):
    check(rgrad, "rgrad", program, expected)


@pytest.mark.skipif(not HAVE_TORCH, reason="torch is not installed")
@pytest.mark.parametrize("program, expected", [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_each_row_is_what_torch_does(program, expected):
    import torch

    check(torch, "torch", program, expected)
