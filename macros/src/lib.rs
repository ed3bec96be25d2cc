//! Derive macros for Hurray (in progress).
