//! Nodes that serve the autograd machinery itself rather than a math op: the error
//! node of `once_differentiable` and the gradient-eraser used by gradcheck.

use super::{any_requires_grad, apply, attach};
use crate::autograd::function::{Backward, BackwardCtx, Grads};
use crate::tensor::Tensor;
use crate::{Error, Result, saved};
use std::borrow::Cow;
use std::sync::Arc;

/// torch's `DelayedError`: differentiating through it raises `msg`. Its outputs are
/// aliases of its inputs; used by `once_differentiable` so that a second-order
/// backward through a Function marked that way fails loudly instead of silently
/// giving zeros.
#[derive(Clone)]
pub struct DelayedError {
    msg: Arc<str>,
}

impl Backward for DelayedError {
    fn name(&self) -> Cow<'static, str> {
        "torch::autograd::Error".into()
    }
    fn apply(&self, _ctx: &BackwardCtx<'_>, _grads: &[Option<Tensor>]) -> Result<Grads> {
        Err(Error::runtime(self.msg.to_string()))
    }
}

/// Aliases of `inputs` whose backward raises `msg` (recorded only when some input
/// requires grad and grad mode is on).
pub fn delayed_error(msg: &str, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
    let outs: Vec<Tensor> = inputs.iter().map(Tensor::detach).collect();
    let refs: Vec<&Tensor> = inputs.iter().collect();
    if any_requires_grad(&refs) {
        let out_refs: Vec<&Tensor> = outs.iter().collect();
        let op = DelayedError { msg: msg.into() };
        attach(op.into(), &refs, saved![], &out_refs)?;
    }
    Ok(outs)
}

/// torch's `UndefinedGradBackward`: passes an undefined (absent) gradient to its input
/// whatever gradient it receives. gradcheck uses it to check that backward formulas
/// cope with missing output gradients.
#[derive(Clone)]
pub struct UndefinedGradBackward;

impl Backward for UndefinedGradBackward {
    fn name(&self) -> Cow<'static, str> {
        "torch::autograd::UndefinedGradBackward".into()
    }
    fn apply(&self, _ctx: &BackwardCtx<'_>, _grads: &[Option<Tensor>]) -> Result<Grads> {
        Ok(smallvec::smallvec![None])
    }
}

/// An alias of `x` whose backward sends no gradient on.
pub fn undefined_grad(x: &Tensor) -> Result<Tensor> {
    apply(
        "aten::_undefined_grad",
        &[x],
        || Ok(x.detach()),
        |_| (UndefinedGradBackward, saved![]),
    )
}
