//! Thread-local grad mode and inference mode, as in torch (each thread starts enabled).

use std::cell::Cell;

thread_local! {
    static GRAD_ENABLED: Cell<bool> = const { Cell::new(true) };
    static INFERENCE: Cell<bool> = const { Cell::new(false) };
    static GRAD_LAYOUT_ENFORCED: Cell<bool> = const { Cell::new(true) };
}

/// torch's `_is_grad_layout_enforcement_enabled` (thread-local, on by default): a leaf's
/// first gradient is stolen only when laid out as the leaf (its strides if it is dense,
/// else row-major); off (`enforce_grad_layout_policy(False)`), any gradient nothing
/// else holds is stolen as it is.
pub fn is_grad_layout_enforcement_enabled() -> bool {
    GRAD_LAYOUT_ENFORCED.with(Cell::get)
}

/// `_set_grad_layout_enforcement_enabled`; returns the previous setting.
pub fn set_grad_layout_enforcement_enabled(on: bool) -> bool {
    GRAD_LAYOUT_ENFORCED.with(|g| g.replace(on))
}

pub fn is_grad_enabled() -> bool {
    GRAD_ENABLED.with(Cell::get)
}

/// Sets grad mode and returns the previous value.
pub fn set_grad_enabled(on: bool) -> bool {
    GRAD_ENABLED.with(|g| g.replace(on))
}

pub fn is_inference_mode_enabled() -> bool {
    INFERENCE.with(Cell::get)
}

/// Sets inference mode (which also disables grad) and returns the previous
/// (inference, grad) pair for `restore_inference_mode`.
pub fn set_inference_mode(on: bool) -> (bool, bool) {
    let prev = (INFERENCE.with(|i| i.replace(on)), is_grad_enabled());
    if on {
        set_grad_enabled(false);
    }
    prev
}

pub fn restore_inference_mode(prev: (bool, bool)) {
    INFERENCE.with(|i| i.set(prev.0));
    set_grad_enabled(prev.1);
}

/// Runs `f` with grad mode set to `on`, restoring it afterwards (also on error).
pub fn with_grad_mode<R>(on: bool, f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            set_grad_enabled(self.0);
        }
    }
    let _r = Restore(set_grad_enabled(on));
    f()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grad_mode_is_thread_local_and_restored() {
        assert!(is_grad_enabled());
        with_grad_mode(false, || {
            assert!(!is_grad_enabled());
            std::thread::spawn(|| assert!(is_grad_enabled()))
                .join()
                .unwrap();
        });
        assert!(is_grad_enabled());
    }
}
