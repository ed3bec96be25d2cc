//! `hurray from-mlir` and `hurray to-mlir` (cargo feature `mlir`, which links
//! LLVM/MLIR 22 through hurray-mlir).

use anyhow::{Context, Result};
use clap::{Subcommand, ValueEnum};
use hurray_mlir::{ImportStyle, LowerOptions, Mlir};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Subcommand)]
pub(crate) enum MlirCommand {
    /// Lower MLIR (text or bytecode, any upstream dialects) to a Hurray file: every tensor
    /// constant becomes a tensor; function signatures become descriptor-only tensors.
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
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum Style {
    Hurray,
    MlProgram,
}

pub(crate) fn run(command: MlirCommand) -> Result<ExitCode> {
    match command {
        MlirCommand::FromMlir {
            input,
            output,
            no_signatures,
            tensor_empty,
            index_as_i64,
        } => {
            let mut options = LowerOptions::default();
            options.signatures = !no_signatures;
            options.tensor_empty = tensor_empty;
            options.index_as_i64 = index_as_i64;
            let mlir = Mlir::new()?;
            let module = mlir.parse_file(&input)?;
            let lowered = hurray_mlir::lower_module_to_path(&module, &output, options)
                .with_context(|| format!("lowering {}", input.display()))?;
            for s in &lowered.skipped {
                eprintln!("hurray: note: not lowered: {s}");
            }
            let data: u64 = lowered.tensors.iter().map(|t| t.bytes).sum();
            let descriptors = lowered
                .tensors
                .iter()
                .filter(|t| t.descriptor.descriptor_only)
                .count();
            println!(
                "{}: {} tensor(s) ({} descriptor-only), {data} data bytes, file {} bytes",
                output.display(),
                lowered.tensors.len(),
                descriptors,
                lowered.file_len
            );
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
            println!("{}: {} tensor(s)", output.display(), file.len());
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn write_atomically(path: &std::path::Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    };
    let mut tmp = tempfile::NamedTempFile::new_in(&dir)
        .with_context(|| format!("creating a temporary file in {}", dir.display()))?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path)
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}
