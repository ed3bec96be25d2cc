//! C API for Hurray (in progress).
