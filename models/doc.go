// Package models builds the architectures that extensor knows from
// Hugging Face's model files: Load finds a model by path or repository
// id (hf.Find), opens it (hf.Open) and builds the architecture its
// config.json names, with its weights. Each architecture is a package
// below this one (gpt2).
package models
