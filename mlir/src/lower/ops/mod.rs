//! One module per lowered construct, each an `impl Collector` block that
//! [`super::Collector::visit`] dispatches to.

mod assemble;
mod constant;
mod global;
mod hurray_dialect;
mod signature;
