//! What the autograd layer (`src/autograd/`) uses of the ops, and nothing else of them
//! (tests/test_op_table.py checks that `src/autograd/` imports only from here): the list
//! of built-in backward nodes the graph stores inline, the ops the engine sums and stores
//! gradients with, the view bookkeeping it refreshes before reading a `grad_fn`, and what
//! a custom Function's output wiring records.

pub use super::BackwardOp;
// gradient accumulation (engine, AccumulateGrad)
pub(crate) use super::{
    add, clone_detached_if_shared, clone_tensor, copy_, inplace_add, zeros_like, zeros_on,
};
// views' history (a view's grad_fn is re-derived after its base changed; an in-place
// custom Function rebases its output)
pub(crate) use super::{edge_of, rebase_history, refresh_view, view_of};
// a custom Function's gradients, checked against its inputs (per sample in a batched pass)
pub(crate) use super::{sum_to, sum_to_batched, to_dtype};
// a batched backward pass's formulas without a batching rule, run once per sample
pub(crate) use super::{select, stack};
