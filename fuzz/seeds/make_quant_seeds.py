"""Writes the fuzz seeds of format 1.4's quantized inputs with the real
producers: one GGUF file holding one block of every type gguf 0.19 lists
(gguf's writer, raw blocks of fixed pseudo-random bytes), and a bitsandbytes
4-bit state dict (NF4 double-quantized and FP4) as transformers saves it.
Run from the repository root with the project venv:
    .tools/py/bin/python fuzz/seeds/make_quant_seeds.py
"""
from pathlib import Path

import gguf
import numpy as np
from gguf.constants import GGML_QUANT_SIZES

HERE = Path(__file__).parent


def gguf_seed():
    rng = np.random.default_rng(1404)
    w = gguf.GGUFWriter(str(HERE / "gguf" / "all_types.gguf"), arch="llama")
    for qtype in gguf.GGMLQuantizationType:
        block, size = GGML_QUANT_SIZES[qtype]
        n = 8 if block == 1 else block
        nbytes = n * size // block
        w.add_tensor(qtype.name.lower(), rng.integers(0, 256, size=(1, nbytes), dtype=np.uint8), raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def bnb_seed():
    import bitsandbytes as bnb
    import torch
    from safetensors.torch import save_file

    torch.manual_seed(0)
    m = torch.nn.Sequential(
        bnb.nn.Linear4bit(64, 4, bias=False, compress_statistics=True, quant_type="nf4"),
        bnb.nn.Linear4bit(64, 2, bias=False, compress_statistics=False, quant_type="fp4"),
    ).to("cpu")
    save_file(m.state_dict(), str(HERE / "safetensors" / "bnb4.safetensors"), metadata={"format": "pt"})


if __name__ == "__main__":
    gguf_seed()
    bnb_seed()
