//! hurray-mlir's integration tests, one module per concern, in one test
//! binary: each test binary links LLVM and MLIR statically (about 200 MB
//! apiece), so one binary instead of nine saves 1.6 GB of disk and eight
//! links of LLVM on every clean build.

mod common;
mod dialect;
mod float_types;
mod foreign;
mod lower;
mod mlir_opt;
mod parameters;
mod passes;
mod roundtrip;
mod sparse_quant;
