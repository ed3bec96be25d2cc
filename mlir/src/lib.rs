//! MLIR lowering for Hurray (in progress).
