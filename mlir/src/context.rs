//! An MLIR context with every upstream dialect and the `hurray` dialect
//! loaded, whose diagnostics are collected instead of printed.

use crate::error::{Error, Result};
use crate::ffi;
use crate::refusal;
use melior::Context;
use melior::dialect::DialectRegistry;
use melior::ir::Module;
use melior::utility::{load_irdl_dialects, register_all_dialects};
use mlir_sys as sys;
use std::cell::RefCell;
use std::io::{Read, Seek};
use std::path::Path;
use std::rc::Rc;

/// The `hurray` dialect in IRDL, generated from `schema/hurray.fbs` by
/// `cargo xtask codegen`.
pub const HURRAY_IRDL: &str = include_str!("gen/hurray.irdl.mlir");

/// An MLIR context ready for Hurray: all upstream dialects registered, the
/// `hurray` IRDL dialect loaded, unregistered dialects allowed (IR of
/// out-of-tree dialects is read in the generic op form), diagnostics captured
/// for error messages.
///
/// Not `Send`: use one per thread.
pub struct Mlir {
    // Field order matters: the context (and every module borrowing it) is
    // dropped before the source buffers MLIR may still reference.
    context: Context,
    diagnostics: Rc<RefCell<Vec<String>>>,
    /// Parsed inputs, copied 64-byte aligned (MLIR bytecode's resource
    /// sections need alignment) and kept for modules that reference them.
    sources: RefCell<Vec<hurray::reader::AlignedBytes>>,
}

impl std::fmt::Debug for Mlir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mlir")
            .field("dialects", &self.context.loaded_dialect_count())
            .finish()
    }
}

type Sink = RefCell<Vec<String>>;

/// Collects a diagnostic. Must not unwind (it is called from C++): it only
/// prints lossily into a String and pushes it if the sink is not borrowed.
unsafe extern "C" fn on_diagnostic(
    d: sys::MlirDiagnostic,
    user: *mut std::ffi::c_void,
) -> sys::MlirLogicalResult {
    // SAFETY: `d` is the diagnostic being handled.
    let text = unsafe { ffi::diagnostic_str(d) };
    // SAFETY: `user` is the `Rc<Sink>` pointer registered in `with_dialect`,
    // alive until `drop_sink`.
    let sink = unsafe { &*user.cast::<Sink>() };
    if let Ok(mut v) = sink.try_borrow_mut() {
        v.push(text);
    }
    // Handled: MLIR does not print it to stderr.
    sys::MlirLogicalResult { value: 1 }
}

unsafe extern "C" fn drop_sink(user: *mut std::ffi::c_void) {
    // SAFETY: `user` came from `Rc::into_raw` in `with_dialect`, and MLIR
    // calls this exactly once.
    drop(unsafe { Rc::from_raw(user.cast::<Sink>().cast_const()) });
}

impl Mlir {
    /// A context with every upstream dialect and the generated `hurray` dialect.
    pub fn new() -> Result<Self> {
        Self::with_dialect(HURRAY_IRDL)
    }

    /// A context whose `hurray` dialect is the IRDL source `irdl` (tests use it
    /// to load a dialect regenerated from an edited schema).
    pub fn with_dialect(irdl: &str) -> Result<Self> {
        let registry = DialectRegistry::new();
        register_all_dialects(&registry);
        let context = Context::new();
        context.append_dialect_registry(&registry);
        context.load_all_available_dialects();
        // IR from producers outside LLVM (stablehlo, torch, tfl, util, ...)
        // is read in the generic op form as unregistered operations; the
        // lowering needs only their builtin attributes and types.
        context.set_allow_unregistered_dialects(true);
        let diagnostics = Rc::new(RefCell::new(Vec::new()));
        let sink = Rc::into_raw(Rc::clone(&diagnostics)).cast_mut().cast();
        // SAFETY: `on_diagnostic` and `drop_sink` match the C API's handler
        // and destructor signatures; `sink` is an `Rc` the context owns until
        // it calls `drop_sink` (when the handler is detached or the context
        // is destroyed).
        unsafe {
            sys::mlirContextAttachDiagnosticHandler(
                context.to_raw(),
                Some(on_diagnostic),
                sink,
                Some(drop_sink),
            );
        }
        let mlir = Mlir {
            context,
            diagnostics,
            sources: RefCell::new(Vec::new()),
        };
        {
            let module = Module::parse(&mlir.context, irdl).ok_or_else(|| Error::Dialect {
                diagnostics: mlir.take_diagnostics(),
            })?;
            if !load_irdl_dialects(&module) {
                return Err(Error::Dialect {
                    diagnostics: mlir.take_diagnostics(),
                });
            }
        }
        Ok(mlir)
    }

    /// The MLIR context.
    pub fn context(&self) -> &Context {
        &self.context
    }

    /// Everything MLIR reported since the last call, one diagnostic per line.
    pub fn take_diagnostics(&self) -> String {
        let v = std::mem::take(&mut *self.diagnostics.borrow_mut());
        if v.is_empty() {
            "(MLIR reported no diagnostic)".to_owned()
        } else {
            v.join("\n")
        }
    }

    /// Parses MLIR text or bytecode (detected by its magic) and verifies it.
    /// `source_name` names the input in errors.
    pub fn parse(&self, source: &[u8], source_name: &str) -> Result<Module<'_>> {
        self.parse_aligned(hurray::reader::AlignedBytes::copy_from(source), source_name)
    }

    /// [`parse`](Self::parse) of bytes already in 64-byte aligned memory:
    /// bytecode's sections (dense resources among them) must be read from
    /// memory at least as aligned as they ask for.
    fn parse_aligned(
        &self,
        aligned: hurray::reader::AlignedBytes,
        source_name: &str,
    ) -> Result<Module<'_>> {
        // Kept for the error: the bytecode header names its producer.
        let head = aligned.as_slice()[..aligned.as_slice().len().min(256)].to_vec();
        let data = sys::MlirStringRef {
            data: aligned.as_slice().as_ptr().cast(),
            length: aligned.as_slice().len(),
        };
        self.diagnostics.borrow_mut().clear();
        // SAFETY: the context is alive; `data` points at the initialised bytes
        // of `aligned`, whose heap storage does not move when `aligned` is
        // pushed into `self.sources` and lives until the context is dropped,
        // so a module that keeps referencing the buffer stays valid.
        let raw = unsafe { sys::mlirModuleCreateParse(self.context.to_raw(), data) };
        self.sources.borrow_mut().push(aligned);
        // SAFETY: a module handle just returned by the parser (null on failure).
        let module = unsafe { Module::from_option_raw(raw) };
        module.ok_or_else(|| refusal::parse_error(&head, source_name, self.take_diagnostics()))
    }

    /// `module` as MLIR text (with its resources), or as bytecode.
    pub fn print(module: &Module<'_>, bytecode: bool) -> Vec<u8> {
        use melior::ir::operation::OperationLike;
        let op = module.as_operation();
        if bytecode {
            op.write_bytecode()
        } else {
            crate::ffi::operation_bytes(op)
        }
    }

    /// Parses MLIR text.
    pub fn parse_text(&self, text: &str) -> Result<Module<'_>> {
        self.parse(text.as_bytes(), "<text>")
    }

    /// Reads and parses an MLIR file (text or bytecode); locations name the file.
    pub fn parse_file(&self, path: &Path) -> Result<Module<'_>> {
        let io = |error| Error::Io {
            op: "reading",
            path: path.to_owned(),
            error,
        };
        let mut file = std::fs::File::open(path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        let mut magic = [0u8; 4];
        let is_bytecode =
            file.read_exact(&mut magic).is_ok() && magic[..] == *refusal::BYTECODE_MAGIC;
        if is_bytecode {
            // Bytecode is read here, into 64-byte aligned memory: MLIR reads
            // a small file into a heap buffer only 16-byte aligned, and then
            // refuses a section that asks for more ("failed to align
            // section"). Its locations are inside it, so nothing names the file.
            let too_big = || io(std::io::Error::from(std::io::ErrorKind::OutOfMemory));
            let len = usize::try_from(len).map_err(|_| too_big())?;
            let mut aligned = hurray::reader::AlignedBytes::try_zeroed(len).ok_or_else(too_big)?;
            file.seek(std::io::SeekFrom::Start(0)).map_err(io)?;
            file.read_exact(aligned.as_mut_slice()).map_err(io)?;
            return self.parse_aligned(aligned, &path.display().to_string());
        }
        // Text: MLIR opens the file itself, so diagnostics carry its name.
        let name = path.to_string_lossy();
        let name_ref = sys::MlirStringRef {
            data: name.as_ptr().cast(),
            length: name.len(),
        };
        self.diagnostics.borrow_mut().clear();
        // SAFETY: the context is alive and `name_ref` points at `name`, which
        // outlives the call; MLIR copies what it keeps.
        let raw = unsafe { sys::mlirModuleCreateParseFromFile(self.context.to_raw(), name_ref) };
        // SAFETY: a module handle just returned by the parser (null on failure).
        let module = unsafe { Module::from_option_raw(raw) };
        module.ok_or_else(|| {
            let diagnostics = self.take_diagnostics();
            let mut head = Vec::with_capacity(256);
            if let Ok(file) = std::fs::File::open(path) {
                // The header only names the producer; unreadable, it is not named.
                let _ = file.take(256).read_to_end(&mut head);
            }
            refusal::parse_error(&head, &path.display().to_string(), diagnostics)
        })
    }
}
