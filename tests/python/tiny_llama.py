"""A tiny Llama-architecture model in plain PyTorch with random weights, built from a config
dict: the real model the worker-flow tests run (no downloads). Its parameters are laid out as
vLLM's LlamaForCausalLM lays them out, so the sizing core's counts apply to it exactly."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

TINY_LLAMA_CONFIG: dict[str, Any] = {
    "model_type": "llama",
    "architectures": ["LlamaForCausalLM"],
    "num_hidden_layers": 4,
    "hidden_size": 1024,
    "num_attention_heads": 16,
    "num_key_value_heads": 4,
    "intermediate_size": 2816,
    "vocab_size": 32000,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "max_position_embeddings": 4096,
}


class _Block(nn.Module):
    def __init__(self, c: dict[str, Any]) -> None:
        super().__init__()
        hidden, heads, kv_heads = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"]
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, hidden // heads
        self.q_proj = nn.Linear(hidden, heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(hidden, kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(hidden, kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(heads * self.head_dim, hidden, bias=False)
        self.gate_proj = nn.Linear(hidden, c["intermediate_size"], bias=False)
        self.up_proj = nn.Linear(hidden, c["intermediate_size"], bias=False)
        self.down_proj = nn.Linear(c["intermediate_size"], hidden, bias=False)
        self.input_layernorm = nn.RMSNorm(hidden)
        self.post_attention_layernorm = nn.RMSNorm(hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens = x.shape[0]
        y = self.input_layernorm(x)
        q = self.q_proj(y).view(tokens, self.heads, self.head_dim).transpose(0, 1)
        k = self.k_proj(y).view(tokens, self.kv_heads, self.head_dim).transpose(0, 1)
        v = self.v_proj(y).view(tokens, self.kv_heads, self.head_dim).transpose(0, 1)
        group = self.heads // self.kv_heads
        k, v = k.repeat_interleave(group, 0), v.repeat_interleave(group, 0)
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(0, 1).reshape(tokens, -1)
        x = x + self.o_proj(attn)
        y = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(y)) * self.up_proj(y))


class TinyLlama(nn.Module):
    """Embedding, decoder blocks, final norm, untied LM head; forward takes token ids [T]."""

    def __init__(self, c: dict[str, Any]) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.layers = nn.ModuleList(_Block(c) for _ in range(c["num_hidden_layers"]))
        self.norm = nn.RMSNorm(c["hidden_size"])
        self.lm_head = nn.Linear(c["hidden_size"], c["vocab_size"], bias=False)

    def forward(self, token_ids: torch.Tensor) -> torch.Tensor:
        x = self.embed_tokens(token_ids)
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(self.norm(x))
