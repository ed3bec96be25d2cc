"""Writes a large GGUF for the GGUF -> Hurray benchmark (docs/performance.md):
N Q4_0 tensors of 4096 x 4096 (random codes, finite f16 scales) and N f32
tensors of 1024 x 1024, with the gguf package. Usage: make_big_gguf.py OUT N"""
import sys, numpy as np, gguf
out = sys.argv[1]
n_tensors = int(sys.argv[2])
rng = np.random.default_rng(0)
w = gguf.GGUFWriter(out, "llama")
w.add_name("bench")
for i in range(n_tensors):
    rows, cols = 4096, 4096
    # Q4_0 blocks of random codes with finite f16 scales.
    blocks = rng.integers(0, 256, size=(rows, cols // 32, 18), dtype=np.uint8)
    scales = rng.uniform(-0.1, 0.1, size=(rows, cols // 32)).astype(np.float16)
    blocks[:, :, :2] = scales.view(np.uint8).reshape(rows, cols // 32, 2)
    w.add_tensor(f"blk.{i}.q4_0", blocks.reshape(rows, -1), raw_dtype=gguf.GGMLQuantizationType.Q4_0)
    f = rng.standard_normal((1024, 1024), dtype=np.float32)
    w.add_tensor(f"blk.{i}.f32", f)
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
