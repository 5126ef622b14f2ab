//! AccumulateGrad: a leaf's (or a retained tensor's) gradient stored or added into its
//! `.grad`, one tensor at a time.

use crate::Result;
use crate::autograd::grad_mode::with_grad_mode;
use crate::ops::autograd_api as ops;
use crate::tensor::Tensor;
use parking_lot::Mutex;

/// Serialises the read-modify-write of one tensor's `.grad`, as the mutex of torch's
/// `AccumulateGrad` node does: two backward calls (or two workers of one) that finish a
/// leaf at the same time would otherwise both read the old gradient, and one sum would be
/// lost, or both would add into the same buffer at once.
///
/// Why a table of 64 striped locks instead of a lock in every tensor: only leaves and
/// retained tensors ever take one, and a field would cost every tensor memory. Two
/// tensors that share a stripe only wait for each other; nothing takes two stripes, runs
/// Python or waits on another thread's stripe while it holds one, so there is no cycle.
/// The arithmetic under the lock runs its kernels on this thread alone
/// ([`runtime::serial`]): a pool worker that split a kernel would run other pool jobs
/// while waiting for its pieces, and one of them may accumulate into a tensor of the
/// same stripe, which would then wait on its own thread.
fn lock_grad(t: &Tensor) -> parking_lot::MutexGuard<'static, ()> {
    const STRIPES: usize = 64;
    static LOCKS: [Mutex<()>; STRIPES] = [const { Mutex::new(()) }; STRIPES];
    let addr = std::sync::Arc::as_ptr(&t.0) as usize as u64;
    // Fibonacci hashing: the allocator's alignment leaves the low bits of addresses equal.
    let stripe = (addr.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58) as usize;
    let lock = &LOCKS[stripe % STRIPES];
    match lock.try_lock() {
        Some(guard) => guard,
        // Through the blocking hook: a thread holding the interpreter lock lets it go
        // while it waits.
        None => crate::runtime::blocking(|| lock.lock()),
    }
}

/// torch's AccumulateGrad: the first gradient is stored (stolen when nothing else holds
/// it and it obeys the layout contract, or the contract is relaxed; cloned otherwise);
/// later ones are added in place, or out of place with history when create_graph is set.
/// Atomic per tensor (see [`lock_grad`]).
pub fn accumulate_grad(t: &Tensor, g: Tensor, opts: &super::Options) -> Result<()> {
    let create_graph = opts.create_graph;
    let _guard = lock_grad(t);
    crate::replay::note_grad(t, false);
    crate::runtime::serial(|| {
        let new = match t.grad() {
            None => {
                if create_graph {
                    // torch's clone_obey_contract: a new tensor with `g` copied in, so the
                    // gradient's history is one CopyBackwards node over g's
                    ops::copy_(&ops::zeros_like(&g)?, &g)?
                } else {
                    ops::clone_detached_if_shared(g, &t.layout(), !opts.relax_grad_layout)?
                }
            }
            Some(old) => {
                if create_graph || old.requires_grad() {
                    ops::add(&old, &g)?
                } else {
                    with_grad_mode(false, || ops::inplace_add(&old, &g))?;
                    return Ok(());
                }
            }
        };
        t.lock().cold_mut().grad = Some(new);
        Ok(())
    })
}

/// `retain_grad`'s accumulation into a non-leaf's `.grad`: always out of place, as in
/// torch. Atomic per tensor like [`accumulate_grad`].
pub(super) fn accumulate_retained(t: &Tensor, g: &Tensor, create_graph: bool) -> Result<()> {
    let _guard = lock_grad(t);
    crate::replay::note_grad(t, false);
    crate::runtime::serial(|| {
        let new = match t.grad() {
            None => {
                if create_graph {
                    g.clone()
                } else {
                    ops::clone_tensor(&g.detach())?
                }
            }
            Some(old) => ops::add(&old, g)?,
        };
        t.lock().cold_mut().grad = Some(new);
        Ok(())
    })
}
