// Package llama is the Llama family of decoder-only transformers as
// Hugging Face's transformers defines it (modeling_llama.py), with its
// parameter names and shapes, so that a checkpoint saved by transformers
// loads unchanged: RMSNorm, the SwiGLU MLP, rotary position embeddings
// in transformers' convention (rotate_half: the first and second halves
// of each head's dimensions) with rope_theta and linear rope_scaling,
// grouped-query attention, a tied or untied lm_head and, for Qwen2 (or
// attention_bias), biases on the projections. model_type llama, mistral
// (without a sliding window) and qwen2 load; this covers Llama 2 and 3,
// TinyLlama, SmolLM2, Qwen2 and Mistral.
package llama
