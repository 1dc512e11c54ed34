"""Writes a tiny random-weight llama GGUF (a byte-level vocabulary, one layer, 115 KB): a model
file for protocol tests of llama.cpp-based servers, which have none to download here.

usage: tiny-gguf.py <out.gguf>
"""
import sys
import numpy as np
import gguf

path = sys.argv[1]
n_embd, n_ff, n_head, n_layer, n_ctx = 32, 64, 2, 1, 512
tokens = [b"<unk>", b"<s>", b"</s>"] + [f"<0x{i:02X}>".encode() for i in range(256)]
types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL] + [gguf.TokenType.BYTE] * 256
n_vocab = len(tokens)
w = gguf.GGUFWriter(path, "llama")
w.add_name("tiny-random")
w.add_context_length(n_ctx)
w.add_embedding_length(n_embd)
w.add_block_count(n_layer)
w.add_feed_forward_length(n_ff)
w.add_head_count(n_head)
w.add_head_count_kv(n_head)
w.add_rope_dimension_count(n_embd // n_head)
w.add_layer_norm_rms_eps(1e-5)
w.add_file_type(gguf.LlamaFileType.ALL_F32)
w.add_tokenizer_model("llama")
w.add_token_list(tokens)
w.add_token_scores([0.0] * n_vocab)
w.add_token_types(types)
w.add_bos_token_id(1)
w.add_eos_token_id(2)
w.add_unk_token_id(0)
rng = np.random.default_rng(0)
def t(name, *shape):
    w.add_tensor(name, (rng.standard_normal(shape) * 0.02).astype(np.float32))
# Dimension 0 of every embedding is 1, far above the noise, so it dominates the residual
# stream; the output row of every token but printable ASCII is -10 there. The model then
# never ends on its own and never writes broken UTF-8: a reply stops only at a token limit.
embd = (rng.standard_normal((n_vocab, n_embd)) * 0.02).astype(np.float32)
embd[:, 0] = 1.0
w.add_tensor("token_embd.weight", embd)
w.add_tensor("output_norm.weight", np.ones(n_embd, dtype=np.float32))
out = (rng.standard_normal((n_vocab, n_embd)) * 0.02).astype(np.float32)
printable = [3 + b for b in range(0x20, 0x7F)]
out[:, 0] = -10.0
out[printable, 0] = 0.0
w.add_tensor("output.weight", out)
for i in range(n_layer):
    w.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(n_embd, dtype=np.float32))
    w.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(n_embd, dtype=np.float32))
    for n in ("attn_q", "attn_k", "attn_v", "attn_output"):
        t(f"blk.{i}.{n}.weight", n_embd, n_embd)
    t(f"blk.{i}.ffn_gate.weight", n_ff, n_embd)
    t(f"blk.{i}.ffn_up.weight", n_ff, n_embd)
    t(f"blk.{i}.ffn_down.weight", n_embd, n_ff)
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
print(path)
