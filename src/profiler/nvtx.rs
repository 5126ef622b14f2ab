//! `emit_nvtx`: while it is on, every op and every backward node is an NVTX range named
//! as torch names it (torch's `getNvtxStr`): `aten::mul, seq = 12` for an op called with
//! grad mode on (12: the sequence number the node it records gets), the node's
//! `MulBackward0, seq = 12` in backward (the forward op's number: the link nvprof users
//! follow), and `, sizes = [[2, 3], [3]]` after either when shapes are recorded.
//!
//! Where the ranges go is a [`Sink`]: the CUDA backend installs NVTX's (through cudarc)
//! when a device is present; without one nothing is sent (torch raises on a machine
//! without a driver; rgrad's `emit_nvtx` is a clean no-op there). A test may install a
//! sink that keeps the messages.

use parking_lot::RwLock;
use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Where NVTX ranges go.
pub trait Sink: Send + Sync {
    fn push(&self, message: &str);
    fn pop(&self);
}

static RECORD_SHAPES: AtomicBool = AtomicBool::new(false);
static SINK: RwLock<Option<Arc<dyn Sink>>> = RwLock::new(None);

thread_local! {
    /// Forward ops open on this thread (an op inside another is torch's
    /// below-autograd call: no sequence number).
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// Installs the sink (or removes it), returning the previous one.
pub fn set_sink(sink: Option<Arc<dyn Sink>>) -> Option<Arc<dyn Sink>> {
    std::mem::replace(&mut *SINK.write(), sink)
}

/// Turns range emission on or off (`emit_nvtx.__enter__` / `__exit__`).
pub fn set_enabled(on: bool, record_shapes: bool) {
    RECORD_SHAPES.store(record_shapes, Ordering::Relaxed);
    crate::dispatch::observe(crate::dispatch::NVTX, on);
}

/// torch's range text.
pub fn message(name: &str, seq: i64, shapes: Option<&[Box<[usize]>]>) -> String {
    let mut s = if seq >= 0 {
        format!("{name}, seq = {seq}")
    } else {
        name.to_string()
    };
    if let Some(shapes) = shapes {
        let dims: Vec<String> = shapes
            .iter()
            .map(|d| {
                let d: Vec<String> = d.iter().map(usize::to_string).collect();
                format!("[{}]", d.join(", "))
            })
            .collect();
        s.push_str(&format!(", sizes = [{}]", dims.join(", ")));
    }
    s
}

/// An open range, popped when dropped.
#[must_use]
pub struct Range(Option<Arc<dyn Sink>>, bool);

impl Drop for Range {
    fn drop(&mut self) {
        if self.1 {
            DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
        }
        if let Some(s) = &self.0 {
            s.pop();
        }
    }
}

/// The range of a forward op.
pub(crate) fn op(name: &str, shapes: impl FnOnce() -> Vec<Box<[usize]>>) -> Range {
    let depth = DEPTH.with(|d| {
        let n = d.get();
        d.set(n + 1);
        n
    });
    let sink = SINK.read().clone();
    if let Some(s) = &sink {
        let seq = if depth == 0 && crate::autograd::grad_mode::is_grad_enabled() {
            crate::dispatch::peek_sequence_nr() as i64
        } else {
            -1
        };
        let shapes = RECORD_SHAPES.load(Ordering::Relaxed).then(shapes);
        s.push(&message(name, seq, shapes.as_deref()));
    }
    Range(sink, true)
}

/// The range of a backward node (`seq`: its forward op's number).
pub(crate) fn node(name: &str, seq: i64) -> Range {
    let sink = SINK.read().clone();
    if let Some(s) = &sink {
        s.push(&message(name, seq, None));
    }
    Range(sink, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn torch_range_text() {
        assert_eq!(message("aten::mul", 3, None), "aten::mul, seq = 3");
        assert_eq!(message("aten::empty", -1, None), "aten::empty");
        let shapes: Vec<Box<[usize]>> = vec![vec![2, 3].into(), vec![].into()];
        assert_eq!(
            message("aten::mul", 0, Some(&shapes)),
            "aten::mul, seq = 0, sizes = [[2, 3], []]"
        );
    }
}
