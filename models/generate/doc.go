// Package generate draws text from a causal language model: the prompt
// in one pass, then one position a token through the model's key-value
// cache, each token picked greedily or sampled with a temperature, top-k,
// top-p and a repetition penalty (as transformers' generate picks them),
// streamed to the caller as it is drawn, until a stop token or the count.
package generate
