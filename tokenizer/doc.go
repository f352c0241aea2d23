// Package tokenizer turns text into the token ids of a Hugging Face
// model and back, from the model's tokenizer.json (and
// tokenizer_config.json), through go-huggingface's hftokenizer: byte-level
// BPE (GPT-2, Llama 3, Qwen2, SmolLM), WordPiece (BERT) and Unigram or
// BPE with a Metaspace pre-tokenizer (SentencePiece-made tokenizers such
// as Llama 2's and TinyLlama's).
//
// For byte-level BPE the text is split as Hugging Face's tokenizers
// split it, with the pre-tokenizer's own regular expression (GPT-2's
// published pattern for ByteLevel with use_regex, the pattern of a Split
// before it otherwise), lookaheads included, through
// github.com/dlclark/regexp2; each piece is then mapped to GPT-2's byte
// alphabet and merged by hftokenizer's BPE. The pieces hftokenizer's own
// pre-tokenizer makes differ from those (it splits on spaces only, and a
// pattern with a lookahead does not compile in Go's regexp).
package tokenizer
