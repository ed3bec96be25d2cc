//! The `hurray` command.

use anyhow::Result;
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

#[cfg(feature = "mlir")]
use hurray_cli::mlir_cmd;
use hurray_cli::{cat, convert, inspect, output};

#[derive(Parser)]
#[command(
    name = "hurray",
    version,
    about = "Inspect, validate, convert and lower Hurray tensor files"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// One line per tensor: name, dtype, shape (? = dynamic), layout, bytes, quantization.
    Inspect {
        file: PathBuf,
        /// Print JSON instead.
        #[arg(long)]
        json: bool,
    },
    /// Check files completely (header, every descriptor, sparse indices); exit 1 on any problem.
    Validate {
        /// Also read every buffer and compare it with the checksum the file
        /// records (format 1.2); without this flag nothing but the header
        /// and the sparse indices is read.
        #[arg(long)]
        checksums: bool,
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Print a tensor's values, or a slice: `hurray cat FILE 'NAME[0:2, :, ::2]'`
    /// (Python's slice notation; an index keeps its dimension). FILE may be a
    /// sharded checkpoint's index: only the pieces the slice covers are read.
    /// Built with the `remote` feature, FILE (here and for inspect, validate
    /// and convert) may be an s3://, gs://, az:// or https:// URL.
    Cat {
        file: PathBuf,
        /// `NAME` or `NAME[slice]`.
        tensor: String,
    },
    /// Write the bundled example tensors (dense, empty, sub-byte, sparse, quantized, dynamic) to a file.
    Example { output: PathBuf },
    /// Convert between .hurray, .safetensors, .npy and .npz, and from .gguf (formats chosen by
    /// extension). A transformers sharded checkpoint (its `*.safetensors.index.json`, or the
    /// directory holding it) converts to a Hurray index and its members, and a Hurray index to
    /// a `*.safetensors.index.json` and its shards.
    Convert {
        /// The file to read: .hurray (a file or a sharded checkpoint's index), .safetensors,
        /// .npy, .npz, .gguf, or a `*.safetensors.index.json` (or its directory); with feature
        /// `remote`, also an s3://, gs://, az:// or https:// URL.
        input: PathBuf,
        /// The file to write, replaced atomically; its extension picks the format.
        output: PathBuf,
        /// Write tensors far larger than the input bytes they are made from (over 16x and
        /// 64 MiB: broadcast strides expanded densely, highly compressed .npz members).
        #[arg(long)]
        allow_expansion: bool,
    },
    #[cfg(feature = "mlir")]
    #[command(flatten)]
    Mlir(mlir_cmd::MlirCommand),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result: Result<ExitCode> = match cli.command {
        Command::Inspect { file, json } => {
            inspect::inspect(&file, json).map(|()| ExitCode::SUCCESS)
        }
        Command::Validate { files, checksums } => inspect::validate(&files, checksums),
        Command::Cat { file, tensor } => cat::cat(&file, &tensor).map(|()| ExitCode::SUCCESS),
        Command::Example { output } => inspect::example(&output).map(|()| ExitCode::SUCCESS),
        Command::Convert {
            input,
            output,
            allow_expansion,
        } => convert::convert(&input, &output, convert::Options { allow_expansion })
            .map(|()| ExitCode::SUCCESS),
        #[cfg(feature = "mlir")]
        Command::Mlir(command) => mlir_cmd::run(command),
    };
    match result {
        Ok(code) => code,
        // The reader of our output went away (`hurray inspect f | head -1`):
        // end quietly, with the status a shell shows for SIGPIPE.
        Err(e) if output::is_broken_pipe(&e) => ExitCode::from(output::BROKEN_PIPE_STATUS),
        Err(e) => {
            eprintln!("hurray: {e:#}");
            ExitCode::FAILURE
        }
    }
}
