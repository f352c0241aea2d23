// Package lora fine-tunes a loaded model through low-rank adapters (LoRA,
// as Hugging Face's PEFT applies them): each targeted projection W gets
// y = W·x + (α/r)·B·A·dropout(x), A [r, in] drawn as PyTorch's
// kaiming_uniform_(a=√5) draws it and B [out, r] zeros, while the base
// weights stay frozen. Adapters save in PEFT's layout
// (adapter_model.safetensors with names such as
// base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight, and
// adapter_config.json), load back, and merge into the base on request.
package lora
