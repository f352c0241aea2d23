// Package gpt2 is Hugging Face's GPT-2 (GPT2LMHeadModel) on extensor: the
// parameters under transformers' names and shapes, so that a checkpoint
// that transformers saved loads unchanged (package hf), and the forward
// pass of modeling_gpt2.py: learned positions, pre-norm blocks whose
// Conv1D layers multiply x·W + b with W [in, out], causal attention
// scaled by 1/√(head dimension), gelu_new (GELU's tanh approximation), a
// final layer norm and the head tied to the token embedding. The forward
// records on the tape, so the model fine-tunes with package optim.
package gpt2
