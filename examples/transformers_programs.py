"""Hugging Face transformers (4.48.3) training steps with the backward under compiled
autograd: each model's grads must equal eager's.  Tiny configs built from code, random
weights, nothing downloaded; two sequence lengths (or batch sizes) per model, the grads
accumulating over both.

The models: Llama with eager attention; Llama with SDPA attention and non-reentrant
gradient checkpointing (``gradient_checkpointing_enable``); Llama with a
``torch.compile``d forward; Mistral with a sliding window; GPT-2 with gradient
checkpointing; BERT masked LM checkpointed and compiled; BART; T5 with a compiled
forward; Qwen2-MoE (top-2 routing over four experts, a shared expert); ViT-MAE
pre-training (random masking from a given noise).

Prints one line per model (``name: ok captures=N``, or why not) and a verdict; exits
0/1.  With ``aot_eager`` the patched wheel and stock 2.6.0 pass all ten, in two captures
each; stock 2.7.0 fails the two checkpointed models without a compiled forward (Llama
with SDPA, GPT-2: "A different number of tensors was saved during the original forward
and recomputation").

    pip install transformers==4.48.3 numpy
    python examples/transformers_programs.py [aot_eager|inductor]
"""

import sys
from pathlib import Path

import torch
import transformers

sys.path.insert(0, str(Path(__file__).resolve().parent))
from real_programs import ca, grads, report  # noqa: E402

transformers.logging.set_verbosity_error()


def tiny(model: str, config: str, **kw):
    torch.manual_seed(0)
    m = getattr(transformers, model)(getattr(transformers, config)(**kw))
    return m.train()


def train(m, flag, *, checkpoint=False, compiled=False, seq2seq=False, lengths=(8, 12), vocab=64):
    if checkpoint:
        m.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    fwd = torch.compile(m, backend="aot_eager") if compiled and flag else m
    with ca(flag):
        for n in lengths:
            torch.manual_seed(n); ids = torch.randint(0, vocab, (2, n))
            labels = torch.randint(0, vocab, (2, n // 2)) if seq2seq else ids
            fwd(input_ids=ids, labels=labels).loss.backward()
    return grads(m)


LLAMA = dict(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2)


def llama(flag):
    return train(tiny("LlamaForCausalLM", "LlamaConfig", **LLAMA, attn_implementation="eager"), flag)


def llama_sdpa_checkpointed(flag):
    return train(tiny("LlamaForCausalLM", "LlamaConfig", **LLAMA, attn_implementation="sdpa"), flag, checkpoint=True)


def llama_compiled(flag):
    return train(tiny("LlamaForCausalLM", "LlamaConfig", **LLAMA, attn_implementation="sdpa"), flag, compiled=True)


def mistral_sliding_window(flag):
    return train(tiny("MistralForCausalLM", "MistralConfig", **LLAMA, sliding_window=4, attn_implementation="eager"),
                 flag)


def gpt2_checkpointed(flag):
    return train(tiny("GPT2LMHeadModel", "GPT2Config", vocab_size=64, n_embd=32, n_layer=2, n_head=4, n_positions=32),
                 flag, checkpoint=True)


def bert_checkpointed_compiled(flag):
    m = tiny("BertForMaskedLM", "BertConfig", vocab_size=64, hidden_size=32, num_hidden_layers=2,
             num_attention_heads=4, intermediate_size=64, max_position_embeddings=32)
    return train(m, flag, checkpoint=True, compiled=True)


def bart(flag):
    m = tiny("BartForConditionalGeneration", "BartConfig", vocab_size=64, d_model=32, encoder_layers=1,
             decoder_layers=1, encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
             decoder_ffn_dim=64, max_position_embeddings=32, dropout=0.0, attention_dropout=0.0)
    return train(m, flag, seq2seq=True)


def t5_compiled(flag):
    m = tiny("T5ForConditionalGeneration", "T5Config", vocab_size=64, d_model=32, d_kv=8, d_ff=64, num_layers=1,
             num_heads=4, dropout_rate=0.0, decoder_start_token_id=0, pad_token_id=0)
    return train(m, flag, seq2seq=True, compiled=True)


def qwen2_moe(flag):
    m = tiny("Qwen2MoeForCausalLM", "Qwen2MoeConfig", **LLAMA, moe_intermediate_size=16,
             shared_expert_intermediate_size=32, num_experts=4, num_experts_per_tok=2, attn_implementation="eager")
    return train(m, flag)


def vit_mae(flag):
    m = tiny("ViTMAEForPreTraining", "ViTMAEConfig", hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
             intermediate_size=64, image_size=16, patch_size=4, decoder_hidden_size=16, decoder_num_hidden_layers=1,
             decoder_num_attention_heads=2, decoder_intermediate_size=32)
    with ca(flag):
        for bs in (2, 3):
            torch.manual_seed(bs)
            m(pixel_values=torch.randn(bs, 3, 16, 16), noise=torch.rand(bs, 16)).loss.backward()
    return grads(m)


PROGRAMS = [llama, llama_sdpa_checkpointed, llama_compiled, mistral_sliding_window, gpt2_checkpointed,
            bert_checkpointed_compiled, bart, t5_compiled, qwen2_moe, vit_mae]


if __name__ == "__main__":
    sys.exit(report(PROGRAMS, "models"))
