//! Hurray as a source (verified at open, its sparse indices checked before
//! anything is written) and as a destination (the runtime's streaming
//! [`Writer`], which is atomic).

use super::{CHUNK, Data, Entry, Feed, Source};
use anyhow::{Result, anyhow, bail};
use hurray::{ElementType, File, Layout, TensorDescriptor, Writer, shape};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::Path;

/// Fails unless `file` passes `hurray validate` whole: the open verified the
/// header and every descriptor, this checks the sparse indices too, so no
/// output is started from a file the validator rejects.
pub(super) fn check_complete(file: &File, path: &Path) -> Result<()> {
    let problems = file.validate(false).problems;
    match problems.as_slice() {
        [] => Ok(()),
        [one] => bail!("{}: {one}", path.display()),
        many => bail!(
            "{}: {} problems:\n  {}",
            path.display(),
            many.len(),
            many.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\n  ")
        ),
    }
}

/// Copies a Hurray file as it is: every layout, quantization and
/// descriptor-only tensor. A file read from a URL streams: each tensor is
/// read, written and dropped.
pub(super) fn copy(file: &File, output: &Path, options: super::Options) -> Result<()> {
    let reader = file.reader();
    let bar = crate::output::progress_bar(file.tensors().map(|t| t.byte_length()).sum());
    let mut w = Writer::create(output)?;
    w.set_digests(options.digest_algorithm())?;
    w.set_file_id(options.file_id);
    w.set_alignment(reader.alignment())?;
    for (k, v) in reader.metadata() {
        w.set_metadata(k, v);
    }
    for t in file.tensors() {
        bar.set_message(t.name().to_owned());
        file.with_data(t, |t| {
            let buffers: Vec<&[u8]> = t.buffers().into_iter().map(|(_, b)| b).collect();
            w.add_tensor(&t.descriptor(), &buffers)
        })?;
        bar.inc(t.byte_length());
    }
    w.finish()?;
    bar.finish_and_clear();
    Ok(())
}

/// The dense tensors of `file` as entries; the others are marked Hurray-only.
pub(super) fn source(file: &File) -> Result<Source<'_>> {
    let mut entries = Vec::with_capacity(file.len());
    for t in file.tensors() {
        if let Some((blocks, scales)) = super::mxfp4::unfold(&t)? {
            // Outside Hurray an MXFP4 weight travels as transformers stores it.
            entries.push(blocks);
            entries.push(scales);
            continue;
        }
        if let Some(parts) = super::bnb::unfold(&t)? {
            // And a bitsandbytes 4-bit weight as bitsandbytes saves it.
            entries.extend(parts);
            continue;
        }
        if let Some(parts) = super::compressed_tensors::unfold(&t)? {
            // And a compressed-tensors layer as it packs it.
            entries.extend(parts);
            continue;
        }
        let layout = t.layout();
        let hurray_only = if t.is_descriptor_only() {
            Some("it is descriptor-only (it carries no data)".to_owned())
        } else if let Some(q) = t.quantization() {
            Some(format!(
                "it is quantized ({} stored, {} expressed)",
                t.element_type().name(),
                q.expressed_type.name()
            ))
        } else if matches!(
            layout,
            Layout::Coo { .. } | Layout::Csr { .. } | Layout::Csc { .. }
        ) {
            Some(format!("it is sparse ({})", layout.name()))
        } else {
            None
        };
        let strides = match (&layout, &hurray_only) {
            // Validated at open: non-negative, within the values buffer.
            (Layout::Strided(s), None) => Some(s.iter().map(|&s| s as u64).collect()),
            _ => None,
        };
        let data = match hurray_only {
            None => Data::Slice(t.data()?),
            Some(_) => Data::None,
        };
        let dense = Entry::new(
            t.name().to_owned(),
            t.element_type(),
            t.shape().to_wire(),
            data,
        );
        // A `.ptd` blob without a tensor layout, converted here: a `.ptd`
        // destination writes it back without one (the only per-tensor
        // metadata a destination other than Hurray keeps).
        let blob: Vec<(String, String)> = t
            .metadata()
            .filter(|(k, _)| *k == super::ptd::BLOB_KEY)
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        entries.push(Entry {
            strides,
            packed_bool: t.element_type() == ElementType::Bool,
            hurray_only,
            metadata: t.metadata().count() - blob.len(),
            tensor_metadata: blob,
            ..dense
        });
    }
    // An unfolded MXFP4 weight `w` adds `w_blocks` and `w_scales`: neither
    // may be a tensor of the file already.
    let mut seen = std::collections::BTreeSet::new();
    for e in &entries {
        if !seen.insert(e.name.as_str()) {
            bail!(
                "tensor {:?} would be written twice: an MXFP4 weight unfolds into it \
                 (transformers' `_blocks`/`_scales` pair) and the file has a tensor of \
                 that name too",
                e.name
            );
        }
    }
    let metadata = file.reader().metadata().to_map();
    Ok(Source {
        entries,
        metadata,
        zip: None,
        gguf: None,
    })
}

/// Writes converted tensors to a `.hurray` file.
pub(super) struct Sink {
    writer: Writer<hurray::atomic::OutputFile>,
}

impl Sink {
    pub(super) fn create(
        path: &Path,
        metadata: &BTreeMap<String, String>,
        options: super::Options,
    ) -> Result<Self> {
        let mut writer = Writer::create(path)?;
        writer.set_digests(options.digest_algorithm())?;
        writer.set_file_id(options.file_id);
        for (k, v) in metadata {
            writer.set_metadata(k.clone(), v.clone());
        }
        Ok(Sink { writer })
    }
}

impl super::Sink for Sink {
    fn tensor(
        &mut self,
        e: &Entry<'_>,
        feed: &mut Feed<'_>,
        quantization: &[Cow<'_, [u8]>],
    ) -> Result<()> {
        let mut desc = TensorDescriptor::new(e.name.clone(), e.dtype, shape(&e.shape));
        if let Some(q) = &e.quantized {
            desc = desc.with_quantization(q.quantization.clone());
        }
        for (k, v) in &e.tensor_metadata {
            desc = desc.with_metadata(k.clone(), v.clone());
        }
        let mut t = self.writer.begin_tensor(&desc)?;
        if e.dtype == ElementType::Bool {
            // One byte per bool in, one bit per bool out (the runtime's packing).
            let mut packer = hurray::pack::Packer::new(1);
            let mut packed = Vec::with_capacity(CHUNK / 8 + 1);
            let mut seen = 0u64;
            feed(&mut |chunk: &[u8]| {
                if let Some(at) = chunk.iter().position(|&b| b > 1) {
                    return Err(anyhow!(
                        "bool element {} holds {}; only 0 and 1 are booleans",
                        seen + at as u64,
                        chunk[at]
                    ));
                }
                seen += chunk.len() as u64;
                packed.clear();
                packer.push(chunk, &mut packed);
                Ok(t.write_all(&packed)?)
            })?;
            packed.clear();
            packer.finish(&mut packed);
            t.write_all(&packed)?;
        } else {
            feed(&mut |chunk: &[u8]| Ok(t.write_all(chunk)?))?;
        }
        // The quantization buffers follow the values, in the plan's order.
        for b in quantization {
            t.write_all(b)?;
        }
        Ok(t.finish()?)
    }

    fn finish(self: Box<Self>) -> Result<()> {
        self.writer.finish()?;
        Ok(())
    }
}
