//! IR of dialects MLIR 22 does not have, in the generic op form: one rule
//! finds the constants whatever the op is called, torch's tensor types are
//! tensors, and names come from producers' attributes and named locations.
//! (Real producers' output: `cli/tests/producers.rs`.)

use crate::common::{constants_only, lower_err, lower_text, lower_text_with, values};
use hurray::ElementType;
use hurray_mlir::Error;

fn names(file: &hurray::File) -> Vec<String> {
    file.tensors().map(|t| t.name().to_owned()).collect()
}

#[test]
fn one_rule_finds_constants_of_any_dialect() {
    // None of these op names is known to the lowering or to MLIR 22.
    let text = r#"
"func.func"() <{function_type = () -> (), sym_name = "f"}> ({
  %0 = "mhlo.constant"() <{value = dense<[1, 2]> : tensor<2xi32>}> : () -> tensor<2xi32>
  %1 = "tfl.pseudo_const"() <{value = dense<[[1.5]]> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  %2 = "acme.weights"() <{payload = dense<7> : tensor<3xi8>, note = "x"}> : () -> tensor<3xi8>
  %3 = "acme.vector_const"() <{value = dense<1> : vector<2xi8>}> : () -> vector<2xi8>
  %4 = "acme.count"() <{value = 3 : i64}> : () -> i64
  "func.return"() : () -> ()
}) : () -> ()
"util.global"() <{sym_name = "table", type = tensor<2xi16>, initial_value = dense<[5, 6]> : tensor<2xi16>}> : () -> ()
"#;
    let (_, file) = lower_text_with(text, constants_only());
    assert_eq!(names(&file), ["f/0", "f/1", "f/2", "table"]);
    assert_eq!(values(&file, "f/0"), [1, 0, 0, 0, 2, 0, 0, 0]);
    assert_eq!(values(&file, "f/1"), 1.5f32.to_le_bytes());
    assert_eq!(values(&file, "f/2"), [7, 7, 7]);
    assert_eq!(values(&file, "table"), [5, 0, 6, 0]);
}

#[test]
fn torch_value_tensors_are_tensors() {
    let text = r#"
"func.func"() <{function_type = (!torch.vtensor<[?,3],f32>) -> (!torch.vtensor<[2,0],si64>, !torch.vtensor<[2],si64>, !torch.int), sym_name = "main"}> ({
^bb0(%arg0: !torch.vtensor<[?,3],f32>):
  %0 = "torch.vtensor.literal"() <{value = dense<[4, -1]> : tensor<2xsi64>}> : () -> !torch.vtensor<[2],si64>
  %1 = "torch.vtensor.literal"() <{value = dense<> : tensor<2x0xi64>}> : () -> !torch.vtensor<[2,0],si64>
  %2 = "torch.constant.int"() <{value = 4 : i64}> : () -> !torch.int
  "func.return"(%1, %0, %2) : (!torch.vtensor<[2,0],si64>, !torch.vtensor<[2],si64>, !torch.int) -> ()
}) : () -> ()
"#;
    let (lowered, file) = lower_text(text);
    assert_eq!(
        names(&file),
        [
            "main/0",
            "main/1",
            "main/arg0",
            "main/result0",
            "main/result1"
        ]
    );
    // torch's `si64` is Hurray's i64.
    let t = file.tensor("main/0").unwrap();
    assert_eq!(t.element_type(), ElementType::Int64);
    assert_eq!(values(&file, "main/0")[..8], 4i64.to_le_bytes());
    let arg = file.tensor("main/arg0").unwrap();
    assert!(arg.is_descriptor_only());
    assert_eq!(arg.shape().to_wire()[0], hurray::format::DYNAMIC_DIM);
    assert_eq!(
        arg.descriptor().metadata["mlir.type"],
        "!torch.vtensor<[?,3],f32>"
    );
    let empty = file.tensor("main/result0").unwrap();
    assert_eq!(empty.shape().to_wire(), [2, 0]);
    assert_eq!(empty.element_type(), ElementType::Int64);
    // `!torch.int` is not a tensor: no entry, nothing skipped.
    assert!(lowered.skipped.is_empty(), "{:?}", lowered.skipped);
}

#[test]
fn names_from_jax_attributes_and_bare_named_locations() {
    let text = r#"
"func.func"() <{arg_attrs = [{jax.arg_info = "params['w']"}, {}, {}, {hurray.name = "explicit"}],
  function_type = (tensor<2xf32>, tensor<3xf32>, tensor<4xf32>, tensor<5xf32>) -> (tensor<2xf32>, tensor<2xf32>),
  res_attrs = [{jax.result_info = "result[0]"}, {}], sym_name = "main"}> ({
^bb0(%a: tensor<2xf32> loc("ignored"), %b: tensor<3xf32> loc("x"), %c: tensor<4xf32> loc("jit(f)"("t.py":1:1)), %d: tensor<5xf32>):
  %0 = "stablehlo.constant"() <{value = dense<1.0> : tensor<2xf32>}> : () -> tensor<2xf32> loc("fc1.weight")
  %1 = "stablehlo.constant"() <{value = dense<2.0> : tensor<2xf32>}> : () -> tensor<2xf32> loc("shared")
  %2 = "stablehlo.constant"() <{value = dense<3.0> : tensor<2xf32>}> : () -> tensor<2xf32> loc("shared")
  %3 = "stablehlo.constant"() <{value = dense<4.0> : tensor<2xf32>}> : () -> tensor<2xf32> loc("jit(f)/w"("t.py":2:1))
  %4 = "stablehlo.constant"() <{value = dense<5.0> : tensor<2xf32>}> : () -> tensor<2xf32> loc("explicit")
  "func.return"(%0, %0) : (tensor<2xf32>, tensor<2xf32>) -> ()
}) : () -> ()
"#;
    let (_, file) = lower_text(text);
    assert_eq!(
        names(&file),
        [
            // jax.arg_info / jax.result_info, within the function;
            "main/params['w']",
            "main/result[0]",
            // a bare named location of an argument, within the function;
            "main/x",
            // an explicit hurray.name as it is;
            "explicit",
            // a bare named location of a constant, unique;
            "fc1.weight",
            // a name two constants share names neither; a name wrapping a
            // position (JAX's op scope) names nothing; a location that is
            // another tensor's name does not take it.
            "main/1",
            "main/2",
            "main/3",
            "main/4",
            // the fallbacks.
            "main/arg2",
            "main/result1",
        ]
        .into_iter()
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect::<Vec<_>>()
    );
    assert_eq!(values(&file, "fc1.weight"), 1.0f32.to_le_bytes().repeat(2));
}

#[test]
fn pretty_form_of_a_foreign_dialect_names_it_and_the_remedy() {
    let e = lower_err(
        "func.func @f() {\n %c = stablehlo.constant dense<1.0> : tensor<2xf32>\n return\n}",
    );
    let Error::ForeignSyntax { dialect, .. } = &e else {
        panic!("{e:?}")
    };
    assert_eq!(dialect, "stablehlo");
    let message = e.to_string();
    assert!(message.contains("print_generic_op_form=True"), "{message}");
    assert!(
        message.contains("Dialect `stablehlo' not found"),
        "{message}"
    );
}

#[test]
fn names_from_tf_entry_function() {
    let text = r#"
func.func @main(%a: tensor<2xf32>, %b: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>)
    attributes {tf.entry_function = {inputs = "x,y", outputs = "out,"}} {
  return %a, %b : tensor<2xf32>, tensor<2xf32>
}
"#;
    let (_, file) = lower_text(text);
    assert_eq!(
        names(&file),
        ["main/out", "main/result1", "main/x", "main/y"]
    );
}
