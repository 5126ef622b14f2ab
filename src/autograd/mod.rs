//! Autograd: the node arena, backward ops' interface, the executor and grad mode.

pub mod anomaly;
pub mod custom_function;
pub mod engine;
pub mod forward_ad;
pub mod function;
pub mod grad_mode;
pub mod graph;
pub mod hooks;
pub mod node_hooks;
pub mod saved;
pub mod saved_hooks;
