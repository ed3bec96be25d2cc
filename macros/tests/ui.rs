//! Compile-time behaviour of the derives: trybuild cases with pinned
//! `.stderr` files (rustc 1.95.0, pinned by rust-toolchain.toml). Refresh
//! them with `TRYBUILD=overwrite cargo test -p hurray-derive --test ui` and
//! review the diff.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
}
