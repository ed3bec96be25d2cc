//! The `hurray` command.

use anyhow::Result;
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

#[cfg(feature = "mlir")]
use hurray_cli::mlir_cmd;
use hurray_cli::{cat, convert, inspect, onnx, output, sign, view};

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
        /// The Hurray file to describe, or a sharded checkpoint's index (its
        /// members, then each tensor and where its pieces are).
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
        /// The Hurray files to check; a sharded checkpoint's index is checked
        /// with every member it lists.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Print a tensor's values, or a slice: `hurray cat FILE 'NAME[0:2, :, ::2]'`
    /// (Python's slice notation; an index keeps its dimension). FILE may be a
    /// sharded checkpoint's index: only the pieces the slice covers are read.
    /// Built with the `remote` feature, FILE (here and for inspect, validate
    /// and convert) may be an s3://, gs://, az:// or https:// URL.
    Cat {
        /// The Hurray file holding the tensor, or a sharded checkpoint's index.
        file: PathBuf,
        /// `NAME` or `NAME[slice]`.
        tensor: String,
    },
    /// Write the bundled example tensors (dense, empty, sub-byte, sparse, quantized, dynamic) to a file.
    Example {
        /// The file to write, replaced atomically.
        output: PathBuf,
    },
    /// Convert between .hurray, .safetensors, .npy, .npz and .irpa (IREE's parameter archive),
    /// from .onnx (its initializers), and between .gguf and .hurray (every GGUF type; formats
    /// chosen by extension). Quantized weights fold into one typed tensor each (GGUF blocks,
    /// bitsandbytes 4-bit, compressed-tensors with its config.json, MXFP4 pairs) and unfold
    /// back byte for byte. A transformers sharded checkpoint (its `*.safetensors.index.json`,
    /// or the directory holding it) converts to a Hurray index and its members, and a Hurray
    /// index to a `*.safetensors.index.json` and its shards.
    Convert {
        /// The file to read: .hurray (a file or a sharded checkpoint's index), .safetensors,
        /// .npy, .npz, .irpa, .gguf, .onnx, or a `*.safetensors.index.json` (or its directory);
        /// with feature `remote`, also an s3://, gs://, az:// or https:// URL.
        input: PathBuf,
        /// The file to write, replaced atomically; its extension picks the format.
        output: PathBuf,
        /// Write tensors far larger than the input bytes they are made from (over 16x and
        /// 64 MiB: broadcast strides expanded densely, highly compressed .npz members).
        #[arg(long)]
        allow_expansion: bool,
        /// Record a BLAKE3 digest of every buffer in the Hurray file(s) written, so that
        /// `hurray sign` can sign them (format 1.4).
        #[arg(long)]
        digests: bool,
    },
    /// Write an ONNX model whose initializers are external data inside a Hurray file, so ONNX
    /// Runtime maps the weights every Hurray reader opens. Writes WEIGHTS from IN's initializers
    /// (or, with --existing, points into a Hurray file written before), then OUT.
    OnnxExternalize {
        /// The ONNX model to read (its external data is read from its directory).
        input: PathBuf,
        /// The ONNX model to write, replaced atomically.
        output: PathBuf,
        /// The Hurray file the initializers point into; in OUT's directory or below.
        #[arg(long)]
        weights: PathBuf,
        /// The Hurray file's alignment: 4096 (a page) lets ONNX Runtime map each tensor.
        #[arg(long, default_value_t = 4096, conflicts_with = "existing")]
        align: u64,
        /// Initializers smaller than this many bytes stay inline in OUT.
        #[arg(long, default_value_t = 1024)]
        threshold: u64,
        /// Point into an existing WEIGHTS (written by a framework) instead of writing it; each
        /// tensor found there by name must have the initializer's type, shape and bytes.
        #[arg(long)]
        existing: bool,
    },
    /// Sign a file (or a sharded checkpoint's index) written with digests: an ed25519
    /// signature over its header digest, which commits to every byte (of every member), written
    /// to FILE.sig. A file without digests is refused, or with --add-digests rewritten with
    /// them first.
    Sign {
        /// The Hurray file, or a sharded checkpoint's index, to sign (a local path).
        file: PathBuf,
        /// The private key: PEM, as `openssl genpkey -algorithm ed25519` writes it.
        #[arg(long)]
        key: PathBuf,
        /// Where to write the signature (default FILE.sig).
        #[arg(long, short)]
        output: Option<PathBuf>,
        /// If FILE records no digests, first rewrite it with them (atomically: its tensors,
        /// metadata and alignment unchanged, BLAKE3 digests added), then sign it.
        #[arg(long)]
        add_digests: bool,
    },
    /// Check a signed file or checkpoint: the signature, then every member's header and every
    /// buffer's digest; exit 1 naming what failed.
    Verify {
        /// The Hurray file, or a sharded checkpoint's index (a URL with feature `remote`).
        file: PathBuf,
        /// The public key: PEM, as `openssl pkey -pubout` writes it.
        #[arg(long)]
        key: PathBuf,
        /// The signature to check (default FILE.sig).
        #[arg(long)]
        signature: Option<PathBuf>,
    },
    /// Write a self-contained HTML report of a file or sharded checkpoint: a zoomable treemap
    /// of bytes by name prefix, a sortable and filterable table of every tensor, totals by
    /// element type, layer and member; with --stats each tensor's min, max, mean, NaN and Inf
    /// counts and a histogram. The page loads nothing and runs no script but its own.
    View {
        /// The Hurray file or sharded checkpoint index (a URL with feature `remote`).
        file: PathBuf,
        /// The HTML file to write, replaced atomically.
        #[arg(long, short)]
        output: PathBuf,
        /// Read every value: min, max, mean, NaN and Inf counts and a histogram per tensor
        /// (dequantized for quantized tensors), streamed in bounded memory.
        #[arg(long)]
        stats: bool,
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
            digests,
        } => convert::convert(
            &input,
            &output,
            convert::Options {
                allow_expansion,
                digests,
                file_id: None,
            },
        )
        .map(|()| ExitCode::SUCCESS),
        Command::OnnxExternalize {
            input,
            output,
            weights,
            align,
            threshold,
            existing,
        } => onnx::externalize(
            &input,
            &output,
            &weights,
            hurray_onnx::Options {
                align,
                threshold,
                existing,
            },
        )
        .map(|()| ExitCode::SUCCESS),
        Command::Sign {
            file,
            key,
            output,
            add_digests,
        } => sign::sign(&file, &key, output.as_deref(), add_digests).map(|()| ExitCode::SUCCESS),
        Command::Verify {
            file,
            key,
            signature,
        } => sign::verify(&file, &key, signature.as_deref()),
        Command::View {
            file,
            output,
            stats,
        } => view::view(&file, &output, stats).map(|()| ExitCode::SUCCESS),
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
