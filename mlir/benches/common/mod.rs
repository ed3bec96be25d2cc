//! What the MLIR benches share: deterministic weights, and modules holding
//! them as `dense<...>` constants or `dense_resource` blobs.
#![allow(dead_code)]

use hurray_mlir::Mlir;
use melior::ir::attribute::{DenseElementsAttribute, StringAttribute, TypeAttribute};
use melior::ir::operation::OperationBuilder;
use melior::ir::r#type::RankedTensorType;
use melior::ir::{Attribute, BlockLike, Identifier, Location, Module, Type};
use std::time::{Duration, Instant};

pub(crate) const CHUNK_BYTES: usize = 4 << 20;
pub(crate) const RUNS: usize = 5;

pub(crate) fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

pub(crate) fn gib_s(bytes: usize, d: Duration) -> f64 {
    bytes as f64 / d.as_secs_f64() / (1u64 << 30) as f64
}

/// `count` chunks of `CHUNK_BYTES` deterministic bytes.
pub(crate) fn sources(count: usize) -> Vec<Vec<u8>> {
    (0..count)
        .map(|c| {
            (0..CHUNK_BYTES)
                .map(|i| {
                    (i as u32)
                        .wrapping_mul(2_654_435_761)
                        .wrapping_add(c as u32) as u8
                })
                .collect()
        })
        .collect()
}

pub(crate) fn global<'c>(
    mlir: &'c Mlir,
    name: &str,
    ty: Type<'c>,
    value: Attribute<'c>,
) -> melior::ir::Operation<'c> {
    let ctx = mlir.context();
    OperationBuilder::new("ml_program.global", Location::unknown(ctx))
        .add_attributes(&[
            (
                Identifier::new(ctx, "sym_name"),
                StringAttribute::new(ctx, name).into(),
            ),
            (
                Identifier::new(ctx, "sym_visibility"),
                StringAttribute::new(ctx, "private").into(),
            ),
            (Identifier::new(ctx, "type"), TypeAttribute::new(ty).into()),
            (Identifier::new(ctx, "value"), value),
        ])
        .build()
        .expect("a valid ml_program.global")
}

/// A module of dense f32 constants holding `src`'s bytes (copied into MLIR).
pub(crate) fn dense_module<'c>(
    mlir: &'c Mlir,
    src: &[Vec<u8>],
    el: &str,
    per_byte: usize,
) -> Module<'c> {
    let ctx = mlir.context();
    let module = Module::new(Location::unknown(ctx));
    let el = Type::parse(ctx, el).unwrap();
    for (i, s) in src.iter().enumerate() {
        let n = (s.len() / per_byte) as u64;
        let ty: Type = RankedTensorType::new(&[n], el, None).into();
        let value = DenseElementsAttribute::raw_buffer(ty, s);
        module
            .body()
            .append_operation(global(mlir, &format!("w{i:03}"), ty, value.into()));
    }
    assert!(melior::ir::operation::OperationLike::verify(
        &module.as_operation()
    ));
    module
}

/// A module of `dense_resource` f32 constants whose blobs borrow `src`.
pub(crate) fn resource_module<'c>(mlir: &'c Mlir, src: &'c [Vec<u8>]) -> Module<'c> {
    let ctx = mlir.context();
    let module = Module::new(Location::unknown(ctx));
    let f32t = Type::parse(ctx, "f32").unwrap();
    for (i, s) in src.iter().enumerate() {
        let ty: Type = RankedTensorType::new(&[(s.len() / 4) as u64], f32t, None).into();
        let name = format!("blob{i:03}");
        // SAFETY: `src` outlives the module ('c); the blob is immutable, the
        // name is copied by MLIR, and no deleter is installed.
        let raw = unsafe {
            mlir_sys::mlirUnmanagedDenseResourceElementsAttrGet(
                melior::ir::TypeLike::to_raw(&ty),
                mlir_sys::MlirStringRef {
                    data: name.as_ptr().cast(),
                    length: name.len(),
                },
                s.as_ptr().cast_mut().cast(),
                s.len(),
                64,
                false,
                None,
                std::ptr::null_mut(),
            )
        };
        // SAFETY: a non-null attribute just created in this context.
        let attr = unsafe { Attribute::from_raw(raw) };
        module
            .body()
            .append_operation(global(mlir, &format!("r{i:03}"), ty, attr));
    }
    module
}

/// memcpy of `src`, chunk after chunk, into the pre-faulted `dst`.
pub(crate) fn time_memcpy(src: &[Vec<u8>], dst: &mut [u8]) -> Duration {
    let t = Instant::now();
    let mut off = 0;
    for s in src {
        dst[off..off + s.len()].copy_from_slice(s);
        off += s.len();
    }
    let d = t.elapsed();
    std::hint::black_box(&dst);
    d
}
