//! `hurray inspect`, `hurray validate` and `hurray example`.

use crate::convert::sharded::open_index;
use crate::input;
use crate::output::{Shown, stdout};
use anyhow::Result;
use hurray::{Dim, ElementType, File, Layout, Quantization, TensorDescriptor, Writer, shape};
use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

fn shape_text(t: &TensorDescriptor) -> String {
    let dims: Vec<String> = t.shape.iter().map(|d| d.to_string()).collect();
    format!("[{}]", dims.join(","))
}

fn layout_text(l: &Layout) -> String {
    match l {
        Layout::Dense => "dense".into(),
        Layout::Strided(s) => format!("strided{s:?}"),
        Layout::Coo {
            nnz, index_type, ..
        } => format!("coo(nnz={nnz},{})", index_type.name()),
        Layout::Csr { nnz, index_type } => format!("csr(nnz={nnz},{})", index_type.name()),
        Layout::Csc { nnz, index_type } => format!("csc(nnz={nnz},{})", index_type.name()),
    }
}

/// `per_axis(axis=1) i8->f32 scale=f32 zp=i8`: the scheme (the runtime's
/// name), the stored type, what it expresses, and the types of the scales and
/// zero points.
pub(crate) fn quant_text(stored: ElementType, q: &Quantization) -> String {
    let scheme = scheme_text(q);
    if let Some(format) = q.block_format {
        // Format 1.4: the values are the format's blocks.
        return format!("{scheme} {format} blocks->{}", q.expressed_type.name());
    }
    let zp = q.zero_point_type.map_or("none", |t| t.name());
    let mut text = format!(
        "{scheme} {}->{} scale={} zp={zp}",
        stored.name(),
        q.expressed_type.name(),
        q.scale_type.name()
    );
    // Format 1.2's fields, shown only when used.
    if q.tensor_scale != 1.0 {
        text.push_str(&format!(" tensor_scale={}", q.tensor_scale));
    }
    if let Some(t) = q.offset_type {
        text.push_str(&format!(" offset={}", t.name()));
    }
    // Format 1.4's fields, likewise.
    if let Some(t) = q.code_table_type {
        text.push_str(&format!(" table={}", t.name()));
    }
    for (what, level) in [
        ("scales", &q.scale_quantization),
        ("offsets", &q.offset_quantization),
    ] {
        if let Some(l) = level {
            text.push_str(&format!(
                " {what}*{}:{}",
                scheme_text(l),
                l.scale_type.name()
            ));
            if let Some(t) = l.code_table_type {
                text.push_str(&format!(":table={}", t.name()));
            }
            if l.tensor_scale != 1.0 {
                text.push_str(&format!(":tensor_scale={}", l.tensor_scale));
            }
            if l.tensor_offset != 0.0 {
                text.push_str(&format!(":tensor_offset={}", l.tensor_offset));
            }
        }
    }
    if q.tensor_offset != 0.0 {
        text.push_str(&format!(" tensor_offset={}", q.tensor_offset));
    }
    if let Some(t) = q.group_index_type {
        text.push_str(&format!(" group_index={}", t.name()));
    }
    text
}

/// `per_block(axis=1,block=32)`: the scheme's name and parameters.
fn scheme_text(q: &Quantization) -> String {
    let params: Vec<String> = [
        q.scheme.axis().map(|a| format!("axis={a}")),
        q.scheme.block_size().map(|b| format!("block={b}")),
    ]
    .into_iter()
    .flatten()
    .collect();
    let scheme = q.scheme.kind().name();
    if params.is_empty() {
        scheme.to_owned()
    } else {
        format!("{scheme}({})", params.join(","))
    }
}

fn quant_json(q: &Quantization) -> Value {
    let mut v = json!({
        "scheme": q.scheme.kind().name(),
        "axis": q.scheme.axis(),
        "block_size": q.scheme.block_size(),
        "expressed_type": q.expressed_type.name(),
        "scale_type": q.scale_type.name(),
        "zero_point_type": q.zero_point_type.map(|t| t.name()),
        "tensor_scale": q.tensor_scale,
        "offset_type": q.offset_type.map(|t| t.name()),
    });
    // Format 1.4's fields, present only when used (older expectations hold).
    let extra = [
        (
            "code_table_type",
            q.code_table_type.map(|t| json!(t.name())),
        ),
        (
            "scale_quantization",
            q.scale_quantization.as_deref().map(quant_json),
        ),
        (
            "offset_quantization",
            q.offset_quantization.as_deref().map(quant_json),
        ),
        (
            "tensor_offset",
            (q.tensor_offset != 0.0).then(|| json!(q.tensor_offset)),
        ),
        (
            "group_index_type",
            q.group_index_type.map(|t| json!(t.name())),
        ),
        ("block_format", q.block_format.map(|f| json!(f.name()))),
    ];
    for (key, value) in extra {
        if let Some(value) = value {
            v[key] = value;
        }
    }
    v
}

/// What `inspect` lists of a tensor: its descriptor, and the bytes of its
/// buffers as the runtime counts them (0 when it has no data).
struct Listed {
    descriptor: TensorDescriptor,
    byte_length: u64,
}

/// The JSON form of a tensor, as `inspect --json` prints it.
fn tensor_json(listed: &Listed) -> Value {
    let t = &listed.descriptor;
    let shape: Vec<Value> = t
        .shape
        .iter()
        .map(|d| match d {
            Dim::Fixed(n) => json!(n),
            // Spelled as the runtime displays a dynamic dimension.
            Dim::Dynamic => json!(d.to_string()),
        })
        .collect();
    json!({
        "name": t.name,
        "dtype": t.element_type.name(),
        "shape": shape,
        "layout": t.layout.name(),
        "byte_length": listed.byte_length,
        "descriptor_only": t.descriptor_only,
        "quantization": t.quantization.as_ref().map(quant_json),
    })
}

pub fn inspect(path: &Path, as_json: bool) -> Result<()> {
    // Only the header is read (two range GETs for a URL). The error names
    // the path already.
    let file = input::open(path)?;
    if file.is_shard_index() {
        // An index holds no tensors: its header is all of it.
        return inspect_index(path, &file, file.version(), as_json);
    }
    let tensors: Vec<Listed> = file
        .tensors()
        .map(|t| Listed {
            descriptor: t.descriptor(),
            byte_length: t.byte_length(),
        })
        .collect();
    let mut out = stdout();
    let (major, minor) = file.version();
    if as_json {
        let tensors: Vec<Value> = tensors.iter().map(tensor_json).collect();
        let metadata: serde_json::Map<String, Value> = file
            .metadata()
            .map(|(k, v)| (k.to_owned(), json!(v)))
            .collect();
        let mut doc = json!({ "version": format!("{major}.{minor}"), "metadata": metadata, "tensors": tensors });
        if let Some(id) = file.file_id() {
            doc["file_id"] = json!(id.to_string());
        }
        writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
        return Ok(());
    }
    writeln!(
        out,
        "{}: Hurray {major}.{minor}, {} tensor(s), {} bytes",
        path.display(),
        tensors.len(),
        file.file_len()
    )?;
    for listed in &tensors {
        let t = &listed.descriptor;
        let data = if t.descriptor_only {
            "no data".to_owned()
        } else {
            format!("{} bytes", listed.byte_length)
        };
        let quant = t
            .quantization
            .as_ref()
            .map(|q| format!("  {}", quant_text(t.element_type, q)))
            .unwrap_or_default();
        writeln!(
            out,
            "  {}  {}  {}  {}  {data}{quant}",
            Shown(&t.name),
            t.element_type.name(),
            shape_text(t),
            layout_text(&t.layout)
        )?;
    }
    Ok(())
}

/// A sharded checkpoint's index: its members, then each logical tensor and
/// where its pieces are.
fn inspect_index(
    path: &Path,
    file: &File,
    (major, minor): (u16, u16),
    as_json: bool,
) -> Result<()> {
    let checkpoint = open_index(file, path)?;
    let members = checkpoint.members();
    let mut out = stdout();
    if as_json {
        let tensors: Vec<Value> = checkpoint
            .tensors()
            .iter()
            .map(|t| {
                let pieces: Vec<Value> = t
                    .pieces
                    .iter()
                    .map(|p| json!({ "member": members[p.member].path, "tensor": p.tensor, "offset": p.offset, "shape": p.shape }))
                    .collect();
                json!({ "name": t.name, "dtype": t.element_type.name(), "shape": t.shape, "pieces": pieces })
            })
            .collect();
        let members: Vec<Value> = members
            .iter()
            .map(|m| {
                let mut member = json!({ "path": m.path, "size": m.size, "crc32c": m.crc32c });
                // Format 1.5: the identity its header must hold.
                if let Some(id) = m.file_id {
                    member["file_id"] = json!(id.to_string());
                }
                member
            })
            .collect();
        let doc = json!({
            "version": format!("{major}.{minor}"),
            "metadata": checkpoint.metadata(),
            "members": members,
            "tensors": tensors,
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
        return Ok(());
    }
    writeln!(
        out,
        "{}: Hurray {major}.{minor} sharded index, {} tensor(s) in {} member(s), {} bytes",
        path.display(),
        checkpoint.tensors().len(),
        members.len(),
        members.iter().map(|m| m.size).sum::<u64>()
    )?;
    for m in members {
        writeln!(
            out,
            "  member {}  {} bytes  crc32c {:#010x}{}",
            Shown(&m.path),
            m.size,
            m.crc32c,
            m.file_id
                .map(|id| format!("  file id {id}"))
                .unwrap_or_default()
        )?;
    }
    for t in checkpoint.tensors() {
        let dims: Vec<String> = t.shape.iter().map(u64::to_string).collect();
        let place = match t.whole_piece() {
            Some(p) => format!("in {}", Shown(&members[p.member].path)),
            None => format!("{} pieces", t.pieces.len()),
        };
        writeln!(
            out,
            "  {}  {}  [{}]  {place}",
            Shown(&t.name),
            t.element_type.name(),
            dims.join(",")
        )?;
    }
    Ok(())
}

/// An index and its members: the index checked whole, each member validated
/// as a file (its sparse indices) and against the index's size, and with
/// `checksums` the runtime's report of every member against its CRC-32C and
/// its own per-buffer checksums.
fn validate_index(path: &Path, file: &File, checksums: bool) -> (Vec<String>, Option<usize>) {
    let checkpoint = match open_index(file, path) {
        Ok(c) => c,
        Err(e) => return (vec![e.to_string()], None),
    };
    let in_member =
        |m: &str, problem: &dyn std::fmt::Display| format!("member {}: {problem}", Shown(m));
    let mut problems = Vec::new();
    for (i, m) in checkpoint.members().iter().enumerate() {
        // Mapped and verified once, here; its size checked against the
        // index; never an index itself, so nothing recurses.
        let member = match checkpoint.member(i) {
            Ok(member) => member,
            Err(e) => {
                problems.push(e.to_string());
                continue;
            }
        };
        let (member_problems, _) = validate_file(member, false);
        problems.extend(member_problems.iter().map(|p| in_member(&m.path, p)));
    }
    if !checksums {
        return (problems, None);
    }
    let report = checkpoint.checksum_report();
    problems.extend(report.buffers.iter().map(|(m, e)| in_member(m, e)));
    // A member unlike the index is shown only when nothing above explains
    // it: a changed buffer changes its member's CRC-32C too, and a member
    // that did not open is listed already.
    if problems.is_empty() {
        problems.extend(report.members.iter().map(ToString::to_string));
    }
    (problems, Some(report.verified))
}

/// Full validation of one file: the verifying open, then every sparse index.
/// The problems of the file at `path`, and (with `checksums`) how many
/// tensors had their checksums verified.
fn validate_one(path: &Path, checksums: bool) -> (Vec<String>, Option<usize>) {
    let file = match input::open(path) {
        Ok(file) => file,
        Err(e) => return (vec![e.to_string()], None),
    };
    if file.is_shard_index() {
        return validate_index(path, &file, checksums);
    }
    validate_file(&file, checksums)
}

/// What opening leaves to check in a file of tensors: its sparse indices,
/// and with `checksums` every buffer (how many tensors matched). A file
/// read from a URL is streamed tensor by tensor.
fn validate_file(file: &File, checksums: bool) -> (Vec<String>, Option<usize>) {
    // Checksums of a file read through a source (a URL) stream every tensor
    // over the network: a progress bar shows how far it is.
    let bar = crate::output::progress_bar(if checksums && file.bytes().is_none() {
        file.tensors().map(|t| t.byte_length()).sum()
    } else {
        0
    });
    bar.set_message("checksums");
    let report = file.validate_reporting(checksums, |n| bar.inc(n));
    bar.finish_and_clear();
    let problems = report.problems.iter().map(ToString::to_string).collect();
    (problems, report.checksummed)
}

pub fn validate(paths: &[PathBuf], checksums: bool) -> Result<ExitCode> {
    let mut ok = true;
    let mut out = stdout();
    for path in paths {
        let (problems, verified) = validate_one(path, checksums);
        if problems.is_empty() {
            match verified {
                None => writeln!(out, "{}: ok", path.display())?,
                Some(0) => writeln!(
                    out,
                    "{}: ok (the file records no checksums)",
                    path.display()
                )?,
                Some(n) => writeln!(
                    out,
                    "{}: ok ({n} tensor(s) match their checksums)",
                    path.display()
                )?,
            }
        }
        for p in problems {
            ok = false;
            writeln!(out, "{}: {p}", path.display())?;
        }
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

pub fn example(output: &Path) -> Result<()> {
    let mut w = Writer::create(output)?;
    w.set_metadata("producer", "hurray example");
    let weights: Vec<f32> = (0..12).map(|i| i as f32 * 0.5).collect();
    w.add_tensor(
        &TensorDescriptor::new("dense.weight", ElementType::Float32, shape(&[3, 4])),
        &[hurray::as_bytes(&weights)],
    )?;
    w.add_tensor(
        &TensorDescriptor::new("empty.slice", ElementType::Float32, shape(&[3, 0, 5])),
        &[&[]],
    )?;
    let int4 = hurray::pack::pack_codes([1u8, 2, 3, 0xf, 0x8], 4);
    w.add_tensor(
        &TensorDescriptor::new("packed.int4", ElementType::Int4, shape(&[5])),
        &[&int4],
    )?;
    let ptrs: Vec<u8> = [0i64; 4].iter().flat_map(|v| v.to_le_bytes()).collect();
    w.add_tensor(
        &TensorDescriptor::new("sparse.csr_empty", ElementType::Float32, shape(&[3, 4]))
            .with_layout(Layout::Csr {
                nnz: 0,
                index_type: ElementType::Int64,
            }),
        &[&ptrs, &[], &[]],
    )?;
    w.add_tensor(
        &TensorDescriptor::new(
            "signature.input",
            ElementType::Float32,
            vec![Dim::Dynamic, Dim::Fixed(784)],
        )
        .into_descriptor_only(),
        &[],
    )?;
    let len = w.finish()?;
    writeln!(stdout(), "wrote {} ({len} bytes)", output.display())?;
    Ok(())
}
