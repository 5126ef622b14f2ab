//! Where a tensor's storage lives. Device is a property of the storage (its buffer's
//! backend: host memory, or `Buffer::Cuda` on an NVIDIA GPU); an op on tensors of two
//! devices is refused before any kernel runs, with torch's message.

use crate::{Error, Result};

/// A device, printed as torch prints it (`cpu`, `cuda:0`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Device {
    Cpu,
    /// An NVIDIA GPU by ordinal.
    Cuda(u32),
}

impl std::fmt::Display for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Device::Cpu => f.write_str("cpu"),
            Device::Cuda(i) => write!(f, "cuda:{i}"),
        }
    }
}

/// A device in one byte (0: the CPU, n + 1: CUDA device n): the graph's per-output
/// metadata keeps it so that a node stays the size it was before devices (a `Device` is
/// eight bytes, and every op records one node).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceCode(u8);

impl From<Device> for DeviceCode {
    #[inline]
    fn from(d: Device) -> Self {
        match d {
            Device::Cpu => DeviceCode(0),
            // (ordinals past 254 cannot occur: the backends serve 64 devices)
            Device::Cuda(i) => DeviceCode(u8::try_from(i + 1).unwrap_or(u8::MAX)),
        }
    }
}

impl From<DeviceCode> for Device {
    #[inline]
    fn from(c: DeviceCode) -> Self {
        match c.0 {
            0 => Device::Cpu,
            n => Device::Cuda(u32::from(n) - 1),
        }
    }
}

thread_local! {
    /// A factory's `device=` for the duration of the call (see [`with_default_device`]).
    static DEFAULT: std::cell::Cell<Device> = const { std::cell::Cell::new(Device::Cpu) };
}

/// Where factories allocate when no device is given (torch's `get_default_device()`).
pub fn default_device() -> Device {
    DEFAULT.with(|d| d.get())
}

/// Sets where factories allocate on this thread from now on (torch.set_default_device,
/// `with rgrad.device(...)`).
pub fn set_default_device(device: Device) {
    DEFAULT.with(|d| d.set(device));
}

/// Runs `f` with factories allocating on `device` (a factory's `device=` argument).
pub fn with_default_device<R>(device: Device, f: impl FnOnce() -> R) -> R {
    let old = DEFAULT.with(|d| d.replace(device));
    struct Restore(Device);
    impl Drop for Restore {
        fn drop(&mut self) {
            DEFAULT.with(|d| d.set(self.0));
        }
    }
    let _restore = Restore(old);
    f()
}

/// The one device of an op's operands, or torch's error naming the first device and the
/// first that differs from it, in operand order (TensorIterator's check, run before any
/// kernel).
pub fn common_device(devices: impl IntoIterator<Item = Device>) -> Result<Device> {
    let mut it = devices.into_iter();
    let first = it.next().unwrap_or(Device::Cpu);
    match it.find(|d| *d != first) {
        None => Ok(first),
        Some(other) => Err(Error::runtime(format!(
            "Expected all tensors to be on the same device, but found at least two devices, {first} and {other}!"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_device_passes_two_are_refused_with_torchs_message() {
        assert_eq!(
            common_device([Device::Cpu, Device::Cpu]).unwrap(),
            Device::Cpu
        );
        assert_eq!(common_device([]).unwrap(), Device::Cpu);
        let e = common_device([Device::Cuda(0), Device::Cpu]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"
        );
        let e = common_device([Device::Cuda(1), Device::Cuda(0)]).unwrap_err();
        assert!(e.to_string().ends_with("cuda:1 and cuda:0!"));
    }
}
