//! An ONNX model as bytes, and the walk to its initializers: the main
//! graph's and those of every subgraph a node holds in an attribute (the
//! bodies of `If`, `Loop`, `Scan`). The same walk rewrites them, copying
//! every other field byte for byte.

use crate::error::{Error, Result};
use crate::initializer::Initializer;
use crate::wire::{self, Fields, Value};
use hurray::limits::{MAX_ONNX_GRAPH_DEPTH, MAX_ONNX_MODEL_BYTES};
use std::path::{Path, PathBuf};

/// The messages on the way from a model to its initializers, and the field
/// numbers (onnx.proto) that lead on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Message {
    Model,
    Graph,
    Node,
    Attribute,
}

const MODEL_GRAPH: u32 = 7;
const GRAPH_NODE: u32 = 1;
const GRAPH_INITIALIZER: u32 = 5;
const NODE_ATTRIBUTE: u32 = 5;
const ATTRIBUTE_GRAPH: u32 = 6;
const ATTRIBUTE_GRAPHS: u32 = 11;

impl Message {
    fn name(self) -> &'static str {
        match self {
            Message::Model => "ModelProto",
            Message::Graph => "GraphProto",
            Message::Node => "NodeProto",
            Message::Attribute => "AttributeProto",
        }
    }

    /// What a field of this message holds, if it is on the way.
    fn child(self, number: u32) -> Option<Child> {
        match (self, number) {
            (Message::Model, MODEL_GRAPH) => Some(Child::Message(Message::Graph)),
            (Message::Graph, GRAPH_NODE) => Some(Child::Message(Message::Node)),
            (Message::Graph, GRAPH_INITIALIZER) => Some(Child::Initializer),
            (Message::Node, NODE_ATTRIBUTE) => Some(Child::Message(Message::Attribute)),
            (Message::Attribute, ATTRIBUTE_GRAPH | ATTRIBUTE_GRAPHS) => {
                Some(Child::Message(Message::Graph))
            }
            _ => None,
        }
    }
}

enum Child {
    Message(Message),
    Initializer,
}

/// What a walk does with each initializer's `TensorProto` (its bytes and
/// their offset in the model): `Some` replaces it.
type Visit<'v> = dyn FnMut(&[u8], usize) -> Result<Option<Vec<u8>>> + 'v;

/// Walks `buf` (a `msg` at offset `base` of the model); `Some` is the
/// message rewritten, when a visit replaced something inside it.
fn walk(
    buf: &[u8],
    base: usize,
    msg: Message,
    depth: usize,
    visit: &mut Visit<'_>,
) -> Result<Option<Vec<u8>>> {
    if depth > MAX_ONNX_GRAPH_DEPTH {
        return Err(Error::Malformed {
            message: msg.name(),
            at: base,
            reason: "subgraphs nest deeper than the limit (MAX_ONNX_GRAPH_DEPTH)",
        });
    }
    // The rewritten message, begun at the first field that changes.
    let mut out: Option<Vec<u8>> = None;
    for field in Fields::new(buf, msg.name()) {
        let field = field.map_err(|e| e.shifted(base))?;
        let replaced = match (msg.child(field.number), field.value) {
            (Some(child), Value::Bytes(s, e)) => {
                let inner = &buf[s..e];
                match child {
                    Child::Message(m) => walk(inner, base + s, m, depth + 1, visit)?,
                    Child::Initializer => visit(inner, base + s)?,
                }
            }
            (Some(_), _) => {
                return Err(Error::Malformed {
                    message: msg.name(),
                    at: base + field.span.start,
                    reason: "a message field is not length-delimited",
                });
            }
            (None, _) => None,
        };
        match (replaced, &mut out) {
            (Some(new), out) => {
                let o = out.get_or_insert_with(|| buf[..field.span.start].to_vec());
                wire::put_bytes_field(o, field.number, &new);
            }
            (None, Some(o)) => o.extend_from_slice(&buf[field.span.clone()]),
            (None, None) => {}
        }
    }
    Ok(out)
}

/// An ONNX model's bytes and the directory its external data is relative to.
#[derive(Clone)]
pub struct Model {
    pub(crate) bytes: Vec<u8>,
    pub(crate) base_dir: PathBuf,
    initializers: Vec<Initializer>,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("bytes", &self.bytes.len())
            .field("base_dir", &self.base_dir)
            .field("initializers", &self.initializers.len())
            .finish()
    }
}

impl Model {
    /// Reads the model at `path` (its external data stays where it is, read
    /// when a tensor's bytes are needed).
    pub fn open(path: &Path) -> Result<Model> {
        let size = std::fs::metadata(path).map_err(Error::io(path))?.len();
        if size > MAX_ONNX_MODEL_BYTES {
            return Err(Error::ModelTooLarge {
                path: path.to_owned(),
                size,
                limit: MAX_ONNX_MODEL_BYTES,
            });
        }
        let bytes = std::fs::read(path).map_err(Error::io(path))?;
        let base_dir = path.parent().map(Path::to_owned).unwrap_or_default();
        Model::from_bytes(bytes, base_dir)
    }

    /// A serialized model; `base_dir` is where its external data lies.
    pub fn from_bytes(bytes: Vec<u8>, base_dir: PathBuf) -> Result<Model> {
        if bytes.len() as u64 > MAX_ONNX_MODEL_BYTES {
            return Err(Error::ModelTooLarge {
                path: PathBuf::from("<bytes>"),
                size: bytes.len() as u64,
                limit: MAX_ONNX_MODEL_BYTES,
            });
        }
        let mut initializers = Vec::new();
        walk(&bytes, 0, Message::Model, 0, &mut |proto, at| {
            initializers.push(Initializer::parse(proto, at)?);
            Ok(None)
        })?;
        Ok(Model {
            bytes,
            base_dir,
            initializers,
        })
    }

    /// Every initializer, in the order the model holds them.
    pub fn initializers(&self) -> &[Initializer] {
        &self.initializers
    }

    /// An initializer's values as Hurray stores them (ONNX's bytes, with
    /// `BOOL` packed to bits), read from the model or its external data file.
    pub fn values<'m>(&'m self, initializer: &Initializer) -> Result<std::borrow::Cow<'m, [u8]>> {
        initializer.hurray_bytes(&self.bytes, &self.base_dir)
    }

    /// The model with the initializers `replace` gives new `TensorProto`
    /// bytes for (by position in [`initializers`](Self::initializers)).
    pub(crate) fn rewrite(
        &self,
        mut replace: impl FnMut(usize) -> Option<Vec<u8>>,
    ) -> Result<Vec<u8>> {
        let mut i = 0;
        let out = walk(&self.bytes, 0, Message::Model, 0, &mut |_, _| {
            let new = replace(i);
            i += 1;
            Ok(new)
        })?;
        Ok(out.unwrap_or_else(|| self.bytes.clone()))
    }
}
