//! The one error type of the core, grouped by the Python exception each variant becomes.
//!
//! Every `Display` text is torch's message for the same failure, so that code which
//! matches on torch's wording keeps working. Only `src/py/error.rs` maps variants to
//! Python exception types, with an exhaustive match.

use crate::shape::fmt_shape;
use std::sync::Arc;

/// Result alias used throughout the core.
pub type Result<T> = std::result::Result<T, Error>;

/// A user error passed through from a callback (Python hook or custom Function). The core
/// never looks inside: it only carries it back to the binding layer.
pub trait ExternalError: std::fmt::Display + std::fmt::Debug + Send + Sync + std::any::Any {
    /// Upcast for the binding layer to recover its concrete type.
    fn as_any(&self) -> &dyn std::any::Any;
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// An error raised in a backward node under anomaly mode: the error itself (what the
    /// user gets), with where the node was made (what the binding warns about first).
    #[error("{}", .0.inner)]
    Anomaly(Box<crate::autograd::anomaly::AnomalyError>),

    // ---- RuntimeError ------------------------------------------------------------------
    /// A free-form RuntimeError whose text is torch's wording for the failure.
    #[error("{0}")]
    Runtime(String),

    #[error(
        "The size of tensor a ({a}) must match the size of tensor b ({b}) at non-singleton dimension {dim}"
    )]
    BroadcastMismatch { a: usize, b: usize, dim: usize },

    #[error("element {index} of tensors does not require grad and does not have a grad_fn")]
    NoGradFn { index: usize },

    #[error("grad can be implicitly created only for scalar outputs")]
    ImplicitGradNonScalar,

    #[error(
        "Trying to backward through the graph a second time (or directly access saved tensors after they have already \
         been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). \
         Specify retain_graph=True if you need to backward through the graph a second time or if you need to access \
         saved tensors after calling backward."
    )]
    GraphFreed,

    /// A non-float tensor asked to require grad; torch 2.15 words it three ways, by call
    /// (see [`crate::tensor::RequiresGradCall`]).
    #[error("{0}")]
    RequiresGradDtype(&'static str),

    #[error("rgrad internal error: {0}; please report")]
    Internal(String),

    /// A custom Function's `ctx.mark_dirty` named a tensor that forward did not return.
    #[error(
        "Some elements marked as dirty during the forward method were not returned as output. The inputs that are \
         modified inplace must all be outputs of the Function."
    )]
    DirtyNotReturned,

    /// A custom Function modified in place (`ctx.mark_dirty`) a leaf that requires grad.
    #[error("a leaf Variable that requires grad has been used in an in-place operation.")]
    DirtyLeafRequiresGrad,

    #[error("cannot register a hook on a tensor that doesn't require gradient")]
    HookWithoutGrad,

    #[error("can't retain_grad on Tensor that has requires_grad=False")]
    RetainGradWithoutGrad,

    /// A device allocation the caching allocator could not serve even after freeing its
    /// cache (torch.cuda.OutOfMemoryError, a RuntimeError), with torch's wording.
    #[error("{0}")]
    OutOfMemory(String),

    /// A numerical failure of a torch.linalg function: a singular matrix, one that is not
    /// positive-definite (torch.linalg.LinAlgError, a RuntimeError), with torch's wording.
    #[error("{0}")]
    LinAlg(String),

    // ---- IndexError --------------------------------------------------------------------
    #[error("Dimension out of range (expected to be in range of [{lo}, {hi}], but got {dim})")]
    DimOutOfRange { dim: i64, lo: i64, hi: i64 },

    /// A free-form IndexError with torch's wording.
    #[error("{0}")]
    Index(String),

    // ---- TypeError / ValueError -------------------------------------------------------
    #[error("{0}")]
    Type(String),

    #[error("{0}")]
    Value(String),

    // ---- NotImplementedError ----------------------------------------------------------
    #[error("the derivative for '{op}' is not implemented")]
    DerivativeNotImplemented { op: &'static str },

    /// An op that does not support an input's dtype (torch raises NotImplementedError).
    #[error("{0}")]
    NotImplemented(String),

    // ---- passed through ---------------------------------------------------------------
    /// An exception raised by user code called from the engine (a hook, a custom Function).
    #[error("{0}")]
    External(Arc<dyn ExternalError>),
}

impl Error {
    pub fn runtime(msg: impl Into<String>) -> Self {
        Error::Runtime(msg.into())
    }
    pub fn index(msg: impl Into<String>) -> Self {
        Error::Index(msg.into())
    }
    pub fn type_error(msg: impl Into<String>) -> Self {
        Error::Type(msg.into())
    }
    pub fn value(msg: impl Into<String>) -> Self {
        Error::Value(msg.into())
    }
    pub fn not_implemented(msg: impl Into<String>) -> Self {
        Error::NotImplemented(msg.into())
    }
}

/// torch's messages with arguments, as RuntimeErrors built here (a variant holding them
/// would make every `Result` of the crate larger).
impl Error {
    // ---- custom Functions (`autograd::custom_function`) ----
    /// The backward of Function `name` returned `got` values for `expected` inputs.
    pub fn wrong_grad_count(name: &str, expected: usize, got: usize) -> Self {
        Error::Runtime(format!(
            "function {name} returned an incorrect number of gradients (expected {expected}, got {got})"
        ))
    }
    /// The backward of Function `name` returned a gradient for a non-tensor input
    /// (`position` counts from 1, as torch's message does).
    pub fn grad_for_non_tensor_input(name: &str, position: usize) -> Self {
        Error::Runtime(format!(
            "function {name} returned a gradient different than None at position {position}, but the \
             corresponding forward input was not a Variable"
        ))
    }
    /// A custom Function's backward returned something that is neither a Tensor nor None
    /// (`type_name`: its type's name).
    pub fn grad_not_tensor(type_name: &str) -> Self {
        Error::Runtime(format!("expected Variable or None (got {type_name})"))
    }
    /// The gradient for input `index` of Function `name` does not broadcast to the
    /// input's shape (torch's validate_outputs).
    pub fn invalid_grad_shape(name: &str, index: usize, got: &[usize], expected: &[usize]) -> Self {
        Error::Runtime(format!(
            "Function {name} returned an invalid gradient at index {index} - got {} but expected shape compatible \
             with {}",
            fmt_shape(got),
            fmt_shape(expected)
        ))
    }

    // ---- tensor hooks (`autograd::hooks`) ----
    /// Hook `hook` returned a gradient of dtype `got` for one of dtype `was` (torch's
    /// legacy type names, `FloatTensor`).
    pub fn hook_changed_type(hook: &str, was: &str, got: &str) -> Self {
        Error::Runtime(format!(
            "hook '{hook}' has changed the type of value (was rgrad.{was} got rgrad.{got})"
        ))
    }
    /// Hook `hook` returned a gradient of another shape.
    pub fn hook_changed_size(hook: &str) -> Self {
        Error::Runtime(format!("hook '{hook}' has changed the size of value"))
    }
}

/// `bail!(Runtime, "...")`-style early return, for torch-worded messages.
#[macro_export]
macro_rules! bail {
    ($($arg:tt)*) => {
        return Err($crate::Error::Runtime(format!($($arg)*)))
    };
}
