// Package hf opens models in Hugging Face's layout: a directory holding
// config.json and its weights, model.safetensors or the shards that
// model.safetensors.index.json maps each tensor to, as transformers'
// save_pretrained writes them and as the Hugging Face cache that Python's
// transformers fills holds them (models--ORG--NAME/snapshots/REV).
//
// Find resolves a path or a repository id ("ORG/NAME", "ORG/NAME@REV") to
// such a directory, reading the cache where HF_HUB_CACHE, HF_HOME or
// XDG_CACHE_HOME put it, as Python's huggingface_hub does. Open reads the
// directory's configuration and checks its weights' files; LoadInto
// copies the weights into a model's tensors by name, checking every
// name, shape and dtype across all shards first and listing every
// mismatch, as checkpoint.File.LoadInto does for one file.
package hf
