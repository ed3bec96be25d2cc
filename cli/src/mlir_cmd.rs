//! `hurray from-mlir`, `hurray to-mlir` and `hurray opt` (cargo feature
//! `mlir`, which links LLVM/MLIR 22 through hurray-mlir).

use crate::output::stdout;
use anyhow::{Context, Result};
use clap::{Subcommand, ValueEnum};
use hurray_mlir::{ImportStyle, LowerOptions, Mlir};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Subcommand)]
pub enum MlirCommand {
    /// Lower MLIR (text or bytecode; upstream dialects in any form, other dialects such as
    /// StableHLO, torch, TFLite and IREE's in the generic op form) to a Hurray file: every
    /// tensor constant becomes a tensor; function signatures become descriptor-only tensors.
    FromMlir {
        input: PathBuf,
        #[arg(short, long)]
        output: PathBuf,
        /// Do not record function arguments and results.
        #[arg(long)]
        no_signatures: bool,
        /// Record `tensor.empty` results as descriptor-only tensors.
        #[arg(long)]
        tensor_empty: bool,
        /// Store `index` elements as i64 instead of failing.
        #[arg(long)]
        index_as_i64: bool,
        /// Write tensors far larger than the IR that holds them (over 16x and 64 MiB:
        /// splats of huge shapes, dense constants with a sparse encoding).
        #[arg(long)]
        allow_expansion: bool,
        /// Work in this process. By default the work runs in a child process,
        /// because MLIR itself aborts or segfaults on some malformed input.
        #[arg(long, hide = true)]
        in_process: bool,
    },
    /// Import a Hurray file as MLIR whose payloads are dense_resource blobs.
    ToMlir {
        input: PathBuf,
        #[arg(short, long)]
        output: PathBuf,
        /// `hurray`: hurray.tensor ops (lossless); `ml-program`: ml_program.global per dense tensor.
        #[arg(long, value_enum, default_value_t = Style::Hurray)]
        style: Style,
        /// Write MLIR bytecode instead of text.
        #[arg(long)]
        bytecode: bool,
    },
    /// Run an MLIR pass pipeline, as `mlir-opt --pass-pipeline` does, with every upstream
    /// pass and Hurray's: `hurray-export-constants{file=PATH threshold=256 inline-small=true}`
    /// writes the module's constants to a Hurray file and leaves typed references;
    /// `hurray-import-constants{file=PATH}` restores them.
    Opt {
        input: PathBuf,
        #[arg(short, long)]
        output: PathBuf,
        /// For example `builtin.module(hurray-export-constants{file=w.hurray})`.
        #[arg(long)]
        pass_pipeline: String,
        /// Write MLIR bytecode instead of text.
        #[arg(long)]
        emit_bytecode: bool,
        /// Work in this process (see from-mlir).
        #[arg(long, hide = true)]
        in_process: bool,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Style {
    Hurray,
    MlProgram,
}

pub fn run(command: MlirCommand) -> Result<ExitCode> {
    match command {
        MlirCommand::FromMlir {
            input,
            output,
            in_process: false,
            ..
        } => isolated(&input, &output),
        MlirCommand::FromMlir {
            input,
            output,
            no_signatures,
            tensor_empty,
            index_as_i64,
            allow_expansion,
            in_process: true,
        } => {
            let mut options = LowerOptions::default();
            options.signatures = !no_signatures;
            options.tensor_empty = tensor_empty;
            options.index_as_i64 = index_as_i64;
            options.allow_expansion = allow_expansion;
            let size = std::fs::metadata(&input).map_or(0, |m| m.len());
            let spinner = crate::output::spinner(size, format!("parsing {}", input.display()));
            let mlir = Mlir::new()?;
            let module = mlir.parse_file(&input)?;
            spinner.set_message(format!("lowering to {}", output.display()));
            let lowered = hurray_mlir::lower_module_to_path(&module, &output, options)
                .with_context(|| format!("lowering {}", input.display()))?;
            spinner.finish_and_clear();
            for s in &lowered.skipped {
                eprintln!("hurray: note: not lowered: {s}");
            }
            let data: u64 = lowered.tensors.iter().map(|t| t.bytes).sum();
            let descriptors = lowered
                .tensors
                .iter()
                .filter(|t| t.descriptor.descriptor_only)
                .count();
            writeln!(
                stdout(),
                "{}: {} tensor(s) ({} descriptor-only), {data} data bytes, file {} bytes",
                output.display(),
                lowered.tensors.len(),
                descriptors,
                lowered.file_len
            )?;
            Ok(ExitCode::SUCCESS)
        }
        MlirCommand::Opt {
            input,
            output,
            in_process: false,
            ..
        } => isolated(&input, &output),
        MlirCommand::Opt {
            input,
            output,
            pass_pipeline,
            emit_bytecode,
            in_process: true,
        } => {
            let mlir = Mlir::new()?;
            let mut module = mlir.parse_file(&input)?;
            hurray_mlir::passes::run_pipeline(&mlir, &mut module, &pass_pipeline)
                .with_context(|| format!("running passes on {}", input.display()))?;
            let bytes = Mlir::print(&module, emit_bytecode);
            write_atomically(&output, &bytes)?;
            writeln!(stdout(), "{}: {} bytes", output.display(), bytes.len())?;
            Ok(ExitCode::SUCCESS)
        }
        MlirCommand::ToMlir {
            input,
            output,
            style,
            bytecode,
        } => {
            let file = hurray::File::open(&input)
                .with_context(|| format!("opening {}", input.display()))?;
            let style = match style {
                Style::Hurray => ImportStyle::Hurray,
                Style::MlProgram => ImportStyle::MlProgram,
            };
            let bytes = if bytecode {
                hurray_mlir::import_to_bytecode(&file, style)?
            } else {
                hurray_mlir::import_to_text(&file, style)?.into_bytes()
            };
            write_atomically(&output, &bytes)?;
            writeln!(stdout(), "{}: {} tensor(s)", output.display(), file.len())?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Writes `bytes` to `path` through the runtime's atomic writer.
fn write_atomically(path: &std::path::Path, bytes: &[u8]) -> Result<()> {
    let mut file = hurray::atomic::AtomicFile::create(path).map_err(|e| anyhow::anyhow!("{e}"))?;
    file.write_all(bytes)
        .with_context(|| format!("writing {}", file.temp_path().display()))?;
    file.commit().map_err(|e| anyhow::anyhow!("{e}"))
}

/// Runs this very command again in a child process with `--in-process`, so a
/// crash inside MLIR (which no caller can catch) becomes a clear error. The
/// child writes through `Writer::create`, so a crash leaves no output file.
fn isolated(input: &std::path::Path, output: &std::path::Path) -> Result<ExitCode> {
    let exe = std::env::current_exe().context("locating the hurray executable")?;
    // `--in-process` goes right after the subcommand's name, before the
    // user's arguments: after a `--` among them it would be read as a path.
    let mut args = std::env::args_os().skip(1);
    let status = std::process::Command::new(exe)
        .args(args.next())
        .arg("--in-process")
        .args(args)
        .status()
        .context("starting the lowering process")?;
    match status.code() {
        Some(0) => Ok(ExitCode::SUCCESS),
        // The child printed its own error.
        Some(_) => Ok(ExitCode::FAILURE),
        None => {
            #[cfg(unix)]
            let how = std::os::unix::process::ExitStatusExt::signal(&status)
                .map_or("was killed".to_owned(), |s| format!("died of signal {s}"));
            #[cfg(not(unix))]
            let how = "was killed".to_owned();
            anyhow::bail!(
                "MLIR {how} while reading {}: the input is malformed in a way MLIR 22 does not report; \
                 {} was not written",
                input.display(),
                output.display()
            )
        }
    }
}
