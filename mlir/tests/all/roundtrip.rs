//! Hurray file -> MLIR (import) -> Hurray file (lower): the tensors come back
//! byte for byte, through in-memory IR, printed text and bytecode.

use hurray::{
    Dim, ElementType, File, Layout, Quantization, TensorDescriptor, Writer,
    descriptor::QuantizationScheme, shape,
};
use hurray_mlir::{ImportStyle, LowerOptions, Mlir, import_file, lower_module};
use melior::ir::operation::OperationLike;

/// Deterministic bytes with every unused high bit of a packed last byte cleared.
fn payload(et: ElementType, count: u64, seed: u8) -> Vec<u8> {
    let len = hurray::elements::packed_len(count, et.bits()).unwrap() as usize;
    let mut v: Vec<u8> = (0..len)
        .map(|i| (i as u8).wrapping_mul(37).wrapping_add(seed))
        .collect();
    let used = (count * u64::from(et.bits())) % 8;
    if let (true, Some(last)) = (used != 0, v.last_mut()) {
        *last &= (1u8 << used) - 1;
    }
    v
}

fn i64_bytes(v: &[i64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A file with every element type, every layout, quantization, empty,
/// descriptor-only and dynamic tensors, metadata and alignments.
fn sample_file() -> Vec<u8> {
    let mut out = Vec::new();
    let mut w = Writer::new(&mut out).unwrap();
    w.set_alignment(128).unwrap();
    w.set_metadata("producer", "roundtrip test");
    w.set_metadata("note", "quotes \" and \\ and \n newlines survive");
    for (i, et) in ElementType::ALL.into_iter().enumerate() {
        let d = TensorDescriptor::new(format!("dense.{}", et.name()), et, shape(&[3, 5]));
        w.add_tensor(&d, &[&payload(et, 15, i as u8)]).unwrap();
        let e = TensorDescriptor::new(format!("empty.{}", et.name()), et, shape(&[3, 0, 5]));
        w.add_tensor(&e, &[&[]]).unwrap();
    }
    let scalar = TensorDescriptor::new("scalar", ElementType::Float64, vec![]);
    w.add_tensor(&scalar, &[&2.5f64.to_le_bytes()]).unwrap();
    let strided = TensorDescriptor::new("strided", ElementType::Int16, shape(&[2, 3]))
        .with_layout(Layout::Strided(vec![4, 1]))
        .with_alignment(256)
        .with_metadata("role", "weights");
    w.add_tensor(&strided, &[&payload(ElementType::Int16, 7, 3)])
        .unwrap();
    let dynamic = TensorDescriptor::new(
        "input",
        ElementType::BFloat16,
        vec![Dim::Dynamic, Dim::Fixed(0), Dim::Fixed(7)],
    )
    .into_descriptor_only();
    w.add_tensor(&dynamic, &[]).unwrap();
    let coo = TensorDescriptor::new("coo", ElementType::Float32, shape(&[4, 4])).with_layout(
        Layout::Coo {
            nnz: 2,
            index_type: ElementType::Int32,
            canonical: true,
        },
    );
    let idx: Vec<u8> = [0i32, 1, 3, 2]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    w.add_tensor(&coo, &[&idx, &f32_bytes(&[1.0, 2.0])])
        .unwrap();
    let csr =
        TensorDescriptor::new("csr", ElementType::Int4, shape(&[3, 4])).with_layout(Layout::Csr {
            nnz: 3,
            index_type: ElementType::Int64,
        });
    w.add_tensor(
        &csr,
        &[
            &i64_bytes(&[0, 1, 1, 3]),
            &i64_bytes(&[2, 0, 3]),
            &[0x21, 0x03],
        ],
    )
    .unwrap();
    let csc = TensorDescriptor::new("csc.empty", ElementType::Float16, shape(&[2, 3])).with_layout(
        Layout::Csc {
            nnz: 0,
            index_type: ElementType::Int64,
        },
    );
    w.add_tensor(&csc, &[&i64_bytes(&[0, 0, 0, 0]), &[], &[]])
        .unwrap();
    let q = TensorDescriptor::new("quant.axis", ElementType::Int8, shape(&[2, 3]))
        .with_quantization(Quantization {
            scheme: QuantizationScheme::PerAxis { axis: 1 },
            expressed_type: ElementType::Float32,
            scale_type: ElementType::Float32,
            zero_point_type: Some(ElementType::Int8),
            storage_min: -127,
            storage_max: 127,
            tensor_scale: 1.0,
            offset_type: None,
            ..Default::default()
        });
    w.add_tensor(
        &q,
        &[
            &[1, 2, 3, 4, 5, 6],
            &f32_bytes(&[0.5, 0.25, 2.0]),
            &[0, 1, 0xFF],
        ],
    )
    .unwrap();
    let qb = TensorDescriptor::new("quant.block", ElementType::UInt4, shape(&[2, 4]))
        .with_quantization(Quantization {
            scheme: QuantizationScheme::PerBlock {
                axis: 1,
                block_size: 2,
            },
            expressed_type: ElementType::BFloat16,
            scale_type: ElementType::Float16,
            zero_point_type: None,
            storage_min: 0,
            storage_max: 15,
            tensor_scale: 1.0,
            offset_type: None,
            ..Default::default()
        });
    w.add_tensor(
        &qb,
        &[
            &[0x21, 0x43, 0x65, 0x87],
            &payload(ElementType::Float16, 4, 9),
            &[],
        ],
    )
    .unwrap();
    // ADR-007 section 8: a quantized axis of size 0 has empty scales.
    let qe = TensorDescriptor::new("quant.empty_axis", ElementType::Int8, shape(&[0, 3]))
        .with_quantization(Quantization {
            scheme: QuantizationScheme::PerAxis { axis: 0 },
            expressed_type: ElementType::Float32,
            scale_type: ElementType::Float32,
            zero_point_type: Some(ElementType::Int32),
            storage_min: -128,
            storage_max: 127,
            tensor_scale: 1.0,
            offset_type: None,
            ..Default::default()
        });
    w.add_tensor(&qe, &[&[], &[], &[]]).unwrap();
    w.finish().unwrap();
    out
}

/// Every tensor of `a` is in `b` with the same descriptor and bytes, and
/// the files hold the same tensors and file-level facts.
fn assert_same_tensors(a: &File, b: &File) {
    assert_eq!(a.len(), b.len());
    assert_eq!(a.reader().alignment(), b.reader().alignment());
    assert_eq!(
        a.reader().metadata().collect::<Vec<_>>(),
        b.reader().metadata().collect::<Vec<_>>()
    );
    for t in a.tensors() {
        let u = b
            .tensor(t.name())
            .unwrap_or_else(|e| panic!("{}: {e}", t.name()));
        assert_eq!(t.descriptor(), u.descriptor(), "{}", t.name());
        // Scales and zero points included.
        assert_eq!(t.buffers(), u.buffers(), "{}", t.name());
    }
}

fn lower_to_file(module: &melior::ir::Module<'_>) -> File {
    let mut out = Vec::new();
    lower_module(module, &mut out, LowerOptions::default()).unwrap();
    File::from_bytes(&out).unwrap()
}

#[test]
fn import_then_lower_reproduces_every_tensor_exactly() {
    let bytes = sample_file();
    let file = File::from_bytes(&bytes).unwrap();
    let mlir = Mlir::new().unwrap();
    let module = import_file(&mlir, &file, ImportStyle::Hurray).unwrap();
    assert!(module.as_operation().verify());
    assert_same_tensors(&file, &lower_to_file(&module));
}

#[test]
fn the_imported_module_borrows_the_file_bytes() {
    let bytes = sample_file();
    let file = File::from_bytes(&bytes).unwrap();
    let mlir = Mlir::new().unwrap();
    let module = import_file(&mlir, &file, ImportStyle::Hurray).unwrap();
    let text = module.as_operation().to_string();
    assert!(
        text.contains("dense_resource<dense.f32.values>"),
        "zero-copy blobs"
    );
    assert!(text.contains("dialect_resources"));
    assert!(
        text.contains("shape = array<i64: -1, 0, 7>"),
        "dynamic stays -1, 0 stays 0"
    );
}

#[test]
fn text_and_bytecode_round_trips_are_exact() {
    let bytes = sample_file();
    let file = File::from_bytes(&bytes).unwrap();
    let text = hurray_mlir::import_to_text(&file, ImportStyle::Hurray).unwrap();
    let bytecode = hurray_mlir::import_to_bytecode(&file, ImportStyle::Hurray).unwrap();
    // Fresh contexts: nothing but the text / bytecode carries the data.
    let mlir = Mlir::new().unwrap();
    let from_text = mlir.parse_text(&text).unwrap();
    assert_same_tensors(&file, &lower_to_file(&from_text));
    let mlir = Mlir::new().unwrap();
    let from_bytecode = mlir.parse(&bytecode, "import.mlirbc").unwrap();
    assert_same_tensors(&file, &lower_to_file(&from_bytecode));
}

#[test]
fn ml_program_style_round_trips_dense_tensors() {
    let mut out = Vec::new();
    let mut w = Writer::new(&mut out).unwrap();
    for (i, et) in ElementType::ALL.into_iter().enumerate() {
        let d = TensorDescriptor::new(format!("w{i}"), et, shape(&[2, 7]));
        w.add_tensor(&d, &[&payload(et, 14, i as u8)]).unwrap();
    }
    let empty = TensorDescriptor::new("empty", ElementType::Int4, shape(&[0]));
    w.add_tensor(&empty, &[&[]]).unwrap();
    let dynamic = TensorDescriptor::new("state", ElementType::Float32, vec![Dim::Dynamic])
        .into_descriptor_only();
    w.add_tensor(&dynamic, &[]).unwrap();
    w.finish().unwrap();
    let file = File::from_bytes(&out).unwrap();
    let text = hurray_mlir::import_to_text(&file, ImportStyle::MlProgram).unwrap();
    assert!(
        text.contains("ml_program.global private @w15(dense_resource<w15.values>"),
        "{text}"
    );
    assert!(!text.contains("hurray."), "plain upstream IR");
    let mlir = Mlir::new().unwrap();
    let module = mlir.parse_text(&text).unwrap();
    let back = lower_to_file(&module);
    for t in file.tensors() {
        let u = back.tensor(t.name()).unwrap();
        assert_eq!(u.dims(), t.dims(), "{}", t.name());
        assert_eq!(u.element_type(), t.element_type());
        assert_eq!(u.is_descriptor_only(), t.is_descriptor_only());
        assert_eq!(u.buffers(), t.buffers(), "{}", t.name());
    }
}

#[test]
fn ml_program_style_refuses_what_it_cannot_hold() {
    let file = File::from_bytes(&sample_file()).unwrap();
    let e = hurray_mlir::import_to_text(&file, ImportStyle::MlProgram).unwrap_err();
    assert!(e.to_string().contains("import in the hurray style"), "{e}");
}

#[test]
fn hurray_ops_are_verified_against_the_schema() {
    let mlir = Mlir::new().unwrap();
    let op = |et: &str, layout: &str| {
        format!(
            r#"%f = "hurray.file"() {{alignment = 64 : i64, metadata = {{}}}} : () -> !hurray.file_handle
"hurray.tensor"(%f) {{name = "t", element_type = {et}, shape = array<i64: 2>, layout = "{layout}", params = {{}}, quantization, buffers = [dense<[1, 2]> : tensor<2xi8>], metadata = {{}}}} : (!hurray.file_handle) -> ()"#
        )
    };
    let m = mlir.parse_text(&op("i8", "dense")).unwrap();
    let f = lower_to_file(&m);
    assert_eq!(
        f.tensor("t")
            .unwrap()
            .buffer(hurray::descriptor::BufferRole::Values)
            .unwrap(),
        [1, 2]
    );
    // An element type the schema lacks, a layout it lacks, a missing attribute,
    // an op the dialect lacks: all rejected by MLIR's verifier at parse time.
    for bad in [
        op("tf32", "dense"),
        op("i8", "bsr"),
        op("i8", "dense").replace(", metadata = {}}", "}"),
        op("i8", "dense").replace("hurray.tensor", "hurray.tensr"),
        op("i8", "dense")
            .replace("(%f)", "()")
            .replace("(!hurray.file_handle)", "()"),
    ] {
        let e = mlir.parse_text(&bad).unwrap_err();
        assert!(
            matches!(e, hurray_mlir::Error::Parse { .. }),
            "{bad}: {e:?}"
        );
    }
}

#[test]
fn inconsistent_hurray_ops_are_errors_not_panics() {
    let mlir = Mlir::new().unwrap();
    let t = |shape: &str, params: &str, buffers: &str| {
        format!(
            r#"%f = "hurray.file"() {{alignment = 64 : i64, metadata = {{}}}} : () -> !hurray.file_handle
"hurray.tensor"(%f) {{name = "t", element_type = f32, shape = array<i64: {shape}>, layout = "dense", params = {params}, quantization, buffers = [{buffers}], metadata = {{}}}} : (!hurray.file_handle) -> ()"#
        )
    };
    for (text, needle) in [
        (t("2", "{}", "dense<[1, 2]> : tensor<2xi8>"), "needs 8"),
        (t("-5", "{}", ""), "-5"),
        (t("-1", "{}", ""), "dynamic"),
        (
            t("2", "{descriptor_only = true}", "dense<1> : tensor<8xi8>"),
            "descriptor-only",
        ),
        (
            t("2", "{}", "dense<[1.0, 2.0]> : tensor<2xf32>"),
            "8-bit integers",
        ),
        (t("2", "{}", "dense_resource<gone> : tensor<8xi8>"), "gone"),
    ] {
        let m = mlir.parse_text(&text).unwrap();
        let mut out = Vec::new();
        let e = lower_module(&m, &mut out, LowerOptions::default()).unwrap_err();
        assert!(e.to_string().contains(needle), "{needle}: {e}");
    }
}

#[test]
fn the_example_model_lowers_and_round_trips_byte_identically() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/mlp.mlir");
    let mlir = Mlir::new().unwrap();
    let module = mlir.parse_file(&path).unwrap();
    let mut first = Vec::new();
    lower_module(&module, &mut first, LowerOptions::default()).unwrap();
    let file = File::from_bytes(&first).unwrap();

    let w = file.tensor("fc1.weight").unwrap();
    assert_eq!(w.dims(), shape(&[8, 16]));
    assert_eq!(w.as_slice::<f32>().unwrap().len(), 128);
    let pruned = file.tensor("fc2.pruned").unwrap();
    assert_eq!(pruned.dims(), shape(&[0, 16]));
    assert!(!pruned.is_descriptor_only());
    assert_eq!(
        pruned
            .buffer(hurray::descriptor::BufferRole::Values)
            .unwrap()
            .len(),
        0
    );
    let input = file.tensor("input").unwrap();
    assert!(input.is_descriptor_only());
    assert_eq!(input.dims(), vec![Dim::Dynamic, Dim::Fixed(8)]);
    assert_eq!(
        file.tensor("output").unwrap().dims(),
        vec![Dim::Dynamic, Dim::Fixed(4)]
    );
    let q = file.tensor("fc2.weight").unwrap();
    assert_eq!(q.dims(), shape(&[16, 4]));
    assert_eq!(
        q.quantization().unwrap().scheme,
        QuantizationScheme::PerAxis { axis: 1 }
    );

    // file -> IR -> file gives the very same bytes.
    let again = Mlir::new().unwrap();
    let imported = import_file(&again, &file, ImportStyle::Hurray).unwrap();
    let mut second = Vec::new();
    lower_module(&imported, &mut second, LowerOptions::default()).unwrap();
    assert!(first == second, "lower(import(lower(x))) == lower(x)");
}

/// Format 1.4's composite quantization has no MLIR form: importing it is
/// refused naming the tensor and the field, never imported without it.
#[test]
fn composite_quantization_is_refused_by_name() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/vectors");
    for (vector, tensor, field) in [
        ("quant_two_level", "q4_k", "quantization.scale_quantization"),
        ("quant_code_table", "iq4_nl", "quantization.code_table_type"),
        ("quant_group_index", "gptq", "quantization.group_index_type"),
        (
            "quant_block_formats",
            "ggml_iq1_m",
            "quantization.block_format",
        ),
    ] {
        let file = File::open(dir.join(format!("{vector}.hurray"))).unwrap();
        let e = hurray_mlir::import_to_text(&file, ImportStyle::Hurray).unwrap_err();
        let text = e.to_string();
        assert!(matches!(e, hurray_mlir::Error::Unsupported { .. }), "{e:?}");
        assert!(
            text.contains(tensor) && text.contains(field),
            "{vector}: {text}"
        );
    }
}
