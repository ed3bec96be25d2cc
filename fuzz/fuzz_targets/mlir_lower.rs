//! The MLIR import path: a tensor constant built from fuzzed parts (element
//! type, shape, splat / dense / sparse / resource payload, sparse encoding,
//! the op that holds it: upstream ops, and ops of dialects MLIR 22 lacks in
//! the generic form, with torch's `!torch.vtensor` result types, IREE-style
//! value-less globals and named locations) is printed as MLIR text, parsed
//! by MLIR and lowered in process. Whatever lowers must verify as a Hurray file, sparse indices
//! included; nothing may panic. (Raw fuzzed text would mostly find the MLIR
//! 22 parser's own crashes, which `hurray from-mlir` isolates in a child
//! process.)
//!
//! This target has its own `main`, which hands over to libFuzzer's driver:
//! the MLIR static libraries carry a tool's `main` that the linker would
//! otherwise pick over libFuzzer's.

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use std::cell::RefCell;
use std::fmt::Write;

/// The element type: every schema type by its MLIR spelling (the runtime's
/// table, so a type added to the schema is fuzzed without an edit here), and
/// `index`, which has no Hurray type.
fn element(pick: u8) -> &'static str {
    let all = hurray::ElementType::ALL;
    match all.get(usize::from(pick) % (all.len() + 1)) {
        Some(et) => et.mlir_name(),
        None => "index",
    }
}
const DIMS: &[u64] = &[0, 1, 2, 3, 7, 64, 1 << 20, 1 << 40];

#[derive(Debug, Arbitrary)]
enum Payload {
    Splat(i8),
    Dense(Vec<i8>),
    Sparse(Vec<(u8, u8, i8)>),
    Resource(Vec<u8>),
}

#[derive(Debug, Arbitrary)]
struct Constant {
    element: u8,
    dims: Vec<u8>,
    payload: Payload,
    encoding: u8,
    holder: u8,
}

fn value(element: &str, v: i8) -> String {
    let narrow_float = hurray::ElementType::from_mlir_name(element)
        .filter(|t| t.float_format().is_some() && t.bits() <= 8);
    match element {
        "i1" => (v & 1 == 1).to_string(),
        // Now and then a raw code (MLIR's hex float literal), so NaNs,
        // infinities, negative zeros and subnormals of the narrow floats come up.
        _ if v % 3 == 0 && narrow_float.is_some() => {
            let bits = narrow_float.map_or(8, |t| t.bits());
            format!("0x{:X}", (v as u8) & (((1u16 << bits) - 1) as u8))
        }
        e if e.starts_with('f') || e == "bf16" => format!("{:.1}", f32::from(v) / 4.0),
        e if e.starts_with("complex") => format!("({v}.0, 1.0)"),
        e if e.starts_with("ui") => (v as u8).to_string(),
        _ => v.to_string(),
    }
}

fn text(c: &Constant) -> String {
    let element = element(c.element);
    let dims: Vec<u64> = c
        .dims
        .iter()
        .take(4)
        .map(|d| DIMS[usize::from(*d) % DIMS.len()])
        .collect();
    let encoding = match (c.encoding % 4, dims.len()) {
        (1, 2) => ", #CSR",
        (2, 2) => ", #CSC",
        (3, 2) => ", #COO",
        _ => "",
    };
    let shape: String = dims.iter().map(|d| format!("{d}x")).collect();
    let ty = format!("tensor<{shape}{element}{encoding}>");
    let attr = match &c.payload {
        Payload::Splat(v) => format!("dense<{}>", value(element, *v)),
        Payload::Dense(vs) => {
            let vs: Vec<String> = vs.iter().map(|v| value(element, *v)).collect();
            if dims.len() == 1 {
                format!("dense<[{}]>", vs.join(", "))
            } else {
                format!("dense<{}>", vs.first().cloned().unwrap_or_default())
            }
        }
        Payload::Sparse(entries) => {
            let rank = dims.len();
            let mut idx = String::new();
            let mut vals = Vec::new();
            for (a, b, v) in entries.iter().take(16) {
                let coord: Vec<String> =
                    [a, b, a, b][..rank].iter().map(|x| x.to_string()).collect();
                let _ = write!(
                    idx,
                    "{}[{}]",
                    if idx.is_empty() { "" } else { ", " },
                    coord.join(", ")
                );
                vals.push(value(element, *v));
            }
            format!("sparse<[{idx}], [{}]>", vals.join(", "))
        }
        Payload::Resource(_) => "dense_resource<blob>".to_owned(),
    };
    // torch's spelling of the shape, with a fuzzed dimension made dynamic
    // or mismatched now and then.
    let torch_dims: Vec<String> = dims
        .iter()
        .enumerate()
        .map(|(i, d)| match (c.holder / 8 + i as u8) % 5 {
            0 => "?".to_owned(),
            1 => (d + 1).to_string(),
            _ => d.to_string(),
        })
        .collect();
    let torch_ty = format!("!torch.vtensor<[{}],{element}>", torch_dims.join(","));
    let loc = match c.holder / 8 % 3 {
        0 => "",
        1 => " loc(\"w\")",
        _ => " loc(\"w\"(\"f.py\":1:2))",
    };
    let op = match c.holder % 7 {
        0 => format!("%c = arith.constant {attr} : {ty}\n"),
        1 => format!("ml_program.global private @g({attr}) : {ty}\n"),
        2 => format!(
            "func.func @f() -> {ty} {{\n  %c = arith.constant {attr} : {ty}\n  return %c : {ty}\n}}\n"
        ),
        3 => {
            format!("%c = \"stablehlo.constant\"() <{{value = {attr} : {ty}}}> : () -> {ty}{loc}\n")
        }
        4 => format!(
            "\"func.func\"() <{{function_type = ({torch_ty}) -> {torch_ty}, sym_name = \"main\"}}> ({{\n\
             ^bb0(%a: {torch_ty}{loc}):\n  \
             %c = \"torch.vtensor.literal\"() <{{value = {attr} : {ty}}}> : () -> {torch_ty}{loc}\n  \
             \"func.return\"(%c) : ({torch_ty}) -> ()\n}}) : () -> ()\n"
        ),
        5 => format!(
            "\"util.global\"() <{{sym_name = \"g\", type = {ty}, initial_value = {attr} : {ty}}}> : () -> ()\n"
        ),
        _ => format!(
            "\"util.global\"() <{{sym_name = \"g\", type = {ty}, initial_value = #flow.parameter.named<\"m\"::\"w\"> : {ty}}}> : () -> ()\n"
        ),
    };
    let mut out = String::from(
        "#CSR = #sparse_tensor.encoding<{ map = (d0, d1) -> (d0 : dense, d1 : compressed) }>\n\
         #CSC = #sparse_tensor.encoding<{ map = (d0, d1) -> (d1 : dense, d0 : compressed) }>\n\
         #COO = #sparse_tensor.encoding<{ map = (d0, d1) -> (d0 : compressed(nonunique), d1 : singleton) }>\n",
    );
    out.push_str(&op);
    if let Payload::Resource(bytes) = &c.payload {
        let hex: String = bytes.iter().take(256).map(|b| format!("{b:02X}")).collect();
        let _ = write!(
            out,
            "{{-#\n  dialect_resources: {{\n    builtin: {{\n      blob: \"0x04000000{hex}\"\n    }}\n  }}\n#-}}\n"
        );
    }
    out
}

thread_local! {
    /// The MLIR context and how many inputs it has parsed. Creating one per
    /// input would dominate the time; keeping one forever grows without bound
    /// (MLIR interns every type and attribute), so it is renewed every 500.
    static MLIR: RefCell<(Option<hurray_mlir::Mlir>, u32)> = const { RefCell::new((None, 0)) };
}

fuzz_target!(|c: Constant| {
    let source = text(&c);
    MLIR.with_borrow_mut(|(mlir, used)| {
        *used += 1;
        if *used > 500 {
            *mlir = None;
            *used = 1;
        }
        let mlir = mlir.get_or_insert_with(|| hurray_mlir::Mlir::new().expect("MLIR context"));
        let Ok(module) = mlir.parse_text(&source) else {
            let _ = mlir.take_diagnostics();
            return;
        };
        let mut out = Vec::new();
        let options = hurray_mlir::LowerOptions::default();
        let lowered = hurray_mlir::lower_module(&module, &mut out, options);
        let _ = mlir.take_diagnostics();
        if lowered.is_ok() {
            let file = hurray::File::from_bytes(&out).expect("a lowered file verifies");
            let problems = file.reader().check_sparse_indices();
            assert!(problems.is_empty(), "{source}\n{problems:?}");
        }
    });
});

unsafe extern "C" {
    fn LLVMFuzzerRunDriver(
        argc: *mut std::ffi::c_int,
        argv: *mut *mut *mut std::ffi::c_char,
        callback: unsafe extern "C" fn(*const u8, usize) -> std::ffi::c_int,
    ) -> std::ffi::c_int;
    fn LLVMFuzzerTestOneInput(data: *const u8, size: usize) -> std::ffi::c_int;
}

fn main() {
    let args: Vec<std::ffi::CString> = std::env::args_os()
        .map(|a| std::ffi::CString::new(a.into_encoded_bytes()).expect("no NUL in arguments"))
        .collect();
    let mut ptrs: Vec<*mut std::ffi::c_char> = args.iter().map(|a| a.as_ptr().cast_mut()).collect();
    ptrs.push(std::ptr::null_mut());
    let mut argc = args.len() as std::ffi::c_int;
    let mut argv = ptrs.as_mut_ptr();
    // SAFETY: argv is a NULL-terminated array of NUL-terminated strings that
    // outlive the call; the callback is libfuzzer-sys's entry point, which
    // runs the target above.
    let status = unsafe { LLVMFuzzerRunDriver(&mut argc, &mut argv, LLVMFuzzerTestOneInput) };
    std::process::exit(status);
}
