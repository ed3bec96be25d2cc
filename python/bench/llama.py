"""The state dict the Python benchmarks load and save: a Llama-shaped stack."""

VOCAB = 32000


def llama_shapes(size_mib):
    """About ``size_mib`` MiB of a Llama-shaped stack, as ``(shapes, d, layers)``:
    ``shapes`` maps each name to ``(shape, torch dtype)``: an embedding and an
    lm_head [vocab, d], per layer q/k/v/o [d, d] with f32 q/k/v biases,
    gate/up [4d, d], down [d, 4d] and two f32 norms [d], a final norm; bf16
    except the norms and biases."""
    import torch

    target = size_mib * 2**20
    d = 256
    for cand in (512, 768, 1024, 1536, 2048, 3072, 4096):
        if 2 * VOCAB * cand * 2 + 4 * 32 * cand * cand <= target:
            d = cand
    per_layer = 32 * d * d + 5 * 4 * d
    layers = max(1, round((target - 2 * VOCAB * d * 2) / per_layer))
    shapes = {"model.embed_tokens.weight": ((VOCAB, d), torch.bfloat16)}
    for i in range(layers):
        p = f"model.layers.{i}."
        for proj in "qkvo":
            shapes[p + f"self_attn.{proj}_proj.weight"] = ((d, d), torch.bfloat16)
        for proj in "qkv":
            shapes[p + f"self_attn.{proj}_proj.bias"] = ((d,), torch.float32)
        shapes[p + "mlp.gate_proj.weight"] = ((4 * d, d), torch.bfloat16)
        shapes[p + "mlp.up_proj.weight"] = ((4 * d, d), torch.bfloat16)
        shapes[p + "mlp.down_proj.weight"] = ((d, 4 * d), torch.bfloat16)
        shapes[p + "input_layernorm.weight"] = ((d,), torch.float32)
        shapes[p + "post_attention_layernorm.weight"] = ((d,), torch.float32)
    shapes["model.norm.weight"] = ((d,), torch.float32)
    shapes["lm_head.weight"] = ((VOCAB, d), torch.bfloat16)
    return shapes, d, layers
