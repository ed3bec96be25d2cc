"""The PyTorch model the deployment-runtime tests (test_onnx.py, test_iree.py)
export: conv, linear, embedding and layer-norm weights in f32, and a bf16
projection the graph casts to f32 (CPU kernels of ONNX Runtime and IREE
have no bf16 matmul)."""

import torch


class DeployModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(1000, 64)
        self.conv = torch.nn.Conv1d(64, 128, 3, padding=1)
        self.ln = torch.nn.LayerNorm(128)
        self.fc = torch.nn.Linear(128, 96)
        self.head = torch.nn.Parameter(torch.randn(96, 32).to(torch.bfloat16))

    def forward(self, ids):
        x = self.emb(ids).transpose(1, 2)
        x = self.conv(x).transpose(1, 2)
        return self.fc(self.ln(x)) @ self.head.float()
