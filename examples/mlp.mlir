// A small MLP, as an ML compiler would hand it to Hurray:
//   input  [?, 8]  f32   (dynamic batch)
//   fc1    8 -> 16 f32   weights in a dense_resource blob, bias inline
//   relu
//   fc2    16 -> 4 int8 weights, per-output-channel quantized (!quant.uniform)
//   output [?, 4]  f32
// plus `fc2.pruned`: the rows of fc2 removed by pruning, an empty [0, 16] slice.
//
//   hurray from-mlir examples/mlp.mlir -o mlp.hurray && hurray inspect mlp.hurray
module @mlp {
  ml_program.global private @fc1.weight(dense_resource<fc1_weight> : tensor<8x16xf32>) : tensor<8x16xf32>
  ml_program.global private @fc1.bias(dense<[-0.08, -0.07, -0.06, -0.05, -0.04, -0.03, -0.02, -0.01, 0.0, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07]> : tensor<16xf32>) : tensor<16xf32>
  ml_program.global private @fc2.pruned(dense<> : tensor<0x16xf32>) : tensor<0x16xf32>

  func.func @forward(%x: tensor<?x8xf32> {hurray.name = "input"}) -> (tensor<?x4xf32> {hurray.name = "output"}) {
    %c0 = arith.constant 0 : index
    %zero = arith.constant 0.0 : f32
    %batch = tensor.dim %x, %c0 : tensor<?x8xf32>

    %w1 = ml_program.global_load_const @fc1.weight : tensor<8x16xf32>
    %b1 = ml_program.global_load_const @fc1.bias : tensor<16xf32>
    %e1 = tensor.empty(%batch) : tensor<?x16xf32>
    %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<?x16xf32>) -> tensor<?x16xf32>
    %h = linalg.matmul ins(%x, %w1 : tensor<?x8xf32>, tensor<8x16xf32>) outs(%z1 : tensor<?x16xf32>) -> tensor<?x16xf32>
    %bb = linalg.broadcast ins(%b1 : tensor<16xf32>) outs(%e1 : tensor<?x16xf32>) dimensions = [0]
    %hb = arith.addf %h, %bb : tensor<?x16xf32>
    %zeros = linalg.fill ins(%zero : f32) outs(%e1 : tensor<?x16xf32>) -> tensor<?x16xf32>
    %relu = arith.maximumf %hb, %zeros : tensor<?x16xf32>

    %w2q = "tosa.const"() {hurray.name = "fc2.weight", values = dense<[[-127, -90, -53, -16], [21, 58, 95, -123], [-86, -49, -12, 25], [62, 99, -119, -82], [-45, -8, 29, 66], [103, -115, -78, -41], [-4, 33, 70, 107], [-111, -74, -37, 0], [37, 74, 111, -107], [-70, -33, 4, 41], [78, 115, -103, -66], [-29, 8, 45, 82], [119, -99, -62, -25], [12, 49, 86, 123], [-95, -58, -21, 16], [53, 90, 127, -91]]> : tensor<16x4xi8>} : () -> tensor<16x4x!quant.uniform<i8:f32:1, {0.0125, 0.02:1, 0.015625, 0.03:-2}>>
    %w2r = quant.scast %w2q : tensor<16x4x!quant.uniform<i8:f32:1, {0.0125, 0.02:1, 0.015625, 0.03:-2}>> to tensor<16x4xi8>
    %w2 = arith.sitofp %w2r : tensor<16x4xi8> to tensor<16x4xf32>
    %e2 = tensor.empty(%batch) : tensor<?x4xf32>
    %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<?x4xf32>) -> tensor<?x4xf32>
    %y = linalg.matmul ins(%relu, %w2 : tensor<?x16xf32>, tensor<16x4xf32>) outs(%z2 : tensor<?x4xf32>) -> tensor<?x4xf32>
    return %y : tensor<?x4xf32>
  }
}

{-#
  dialect_resources: {
    builtin: {
      fc1_weight: "0x0400000000000000A323393E5F98AC3E0B46E53EC0ECFE3E3411F63EFAEDCB3EDD24863E35EFB83D5BB1BFBDF9A087BE1FF4CCBE4694F6BE6DC5FEBE6F81E4BEB150ABBEC6DC35BE89D25E3B7F6A3C3E29EDAD3EC217E63E1214FF3E3D9BF53EBADACA3EC1A8843EA1F8B13DF0A7C6BD151D89BE5F07CEBE3D0AF7BE1B9EFEBED3BCE3BE0309AABEEA9532BE89D2DE3B24973F3EBB27AF3E42CFE63E643BFF3E2B18F53E7AC7C93EA52C833E7A36AB3D166ACDBD31998ABE840DCFBE3480F7BEAD69FEBE1CEBE2BE39B4A8BE0E4F2FBEE71D273C01DE423E696FB03EDE93E73EB762FF3E1895F43E39B4C83E8AB0813EE63FA43DAA60D4BD31088CBEA913D0BE10E9F7BE3F35FEBE6519E2BE8B6CA7BE31082CBE89D25E3CA60A463E17B7B13E5E4BE83EEE7CFF3E0612F43EF9A0C73E5227803EBF7D9D3DD122DBBD4D848DBEB30CD1BE075FF8BED200FEBEAE47E1BEC217A6BE55C128BE96438B3C8351493EAAF1B23EF90FE93E2497FF3EF38EF33EB98DC63E6D567D3E2B87963DF7E4E1BD4DF38EBED712D2BEE3C7F8BE64CCFDBEF775E0BEF8C2A4BE787A25BEE71DA73C287E4C3E5839B43E7AC7E93E5BB1FF3EC5FEF23E5D6DC53EFE437A3E97908F3D1EA7E8BD4E6290BEE10BD3BEBE30F9BEDB8AFDBE2497DFBE2F6EA3BE9C3322BE38F8C23CCEAA4F3EEB73B53EDE71EA3E77BEFF3E986EF23E014DC43E9031773E029A883D"
    }
  }
#-}
