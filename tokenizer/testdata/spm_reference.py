"""Trains two small SentencePiece models here (Debian's
python3-sentencepiece, BPE with byte fallback, 400 pieces, on the first
200 texts of texts.json) and writes each one's encoding of every text:

- sentencepiece/: tokenizer.model without a dummy prefix, with <bos> and
  <eos> (Gemma's kind, which github.com/eliben/go-sentencepiece reads),
  and ids.json.
- llama2/: a model as Llama 2's is made (a dummy prefix, <s> and </s>),
  converted to tokenizer.json as transformers' LlamaConverter converts
  Llama 2's (the vocabulary, and the merges its SentencePieceExtractor
  derives from the pieces' scores; normalizer Prepend ▁ and Replace
  " " → ▁; no pre-tokenizer; BPE with byte fallback), and ids.json.

Run from this directory: python3 spm_reference.py (make
tokenizer-reference)."""

import io
import json
import os

import sentencepiece as spm

texts = json.load(open("texts.json"))
model = io.BytesIO()
spm.SentencePieceTrainer.train(sentence_iterator=iter(texts[:200]), model_writer=model, vocab_size=400, model_type="bpe",
                               byte_fallback=True, character_coverage=0.9995, split_digits=True, add_dummy_prefix=False, remove_extra_whitespaces=False,
                               num_threads=1, bos_id=1, eos_id=2, unk_id=0, pad_id=-1, bos_piece="<bos>", eos_piece="<eos>", minloglevel=2,
                               max_sentence_length=1 << 16, normalization_rule_name="identity")
with open("sentencepiece/tokenizer.model", "wb") as f:
    f.write(model.getvalue())
sp = spm.SentencePieceProcessor(model_proto=model.getvalue())
ids = [sp.encode(t) for t in texts]
with open("sentencepiece/ids.json", "w") as f:
    f.write("[\n" + ",\n".join(json.dumps(i) for i in ids) + "\n]\n")
print(len(texts), "texts,", sum(len(i) for i in ids), "tokens, sentencepiece", spm.__version__)


# The Llama 2 kind, and its tokenizer.json.
model = io.BytesIO()
spm.SentencePieceTrainer.train(sentence_iterator=iter(texts[:200]), model_writer=model, vocab_size=400, model_type="bpe",
                               byte_fallback=True, character_coverage=0.9995, split_digits=True, add_dummy_prefix=True,
                               remove_extra_whitespaces=False, num_threads=1, bos_id=1, eos_id=2, unk_id=0, pad_id=-1,
                               minloglevel=2, max_sentence_length=1 << 16, normalization_rule_name="identity")
sp = spm.SentencePieceProcessor(model_proto=model.getvalue())
vocab = {sp.id_to_piece(i): i for i in range(sp.get_piece_size())}
scores = {sp.id_to_piece(i): sp.get_score(i) for i in range(sp.get_piece_size())}
merges = []
for piece, score in scores.items():
    local = [(piece[:k], piece[k:], score) for k in range(1, len(piece)) if piece[:k] in vocab and piece[k:] in vocab]
    merges.extend(sorted(local, key=lambda m: (vocab[m[0]], vocab[m[1]])))
merges = [[l, r] for l, r, _ in sorted(merges, key=lambda m: m[2], reverse=True)]
special = [(0, "<unk>"), (1, "<s>"), (2, "</s>")]
tok = {"version": "1.0", "truncation": None, "padding": None,
       "added_tokens": [{"id": i, "content": c, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
                         "special": True} for i, c in special],
       "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"},
                                                          {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
       "pre_tokenizer": None,
       "post_processor": {"type": "TemplateProcessing",
                          "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                          "pair": [], "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
       "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
                                                    {"type": "ByteFallback"}, {"type": "Fuse"},
                                                    {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
       "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                 "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "vocab": vocab, "merges": merges}}
os.makedirs("llama2", exist_ok=True)
with open("llama2/tokenizer.json", "w") as f:
    json.dump(tok, f, ensure_ascii=False)
with open("llama2/tokenizer_config.json", "w") as f:
    json.dump({"tokenizer_class": "LlamaTokenizer", "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
               "add_bos_token": True, "add_eos_token": False}, f, indent=2)
ids = [sp.encode(t) for t in texts]
with open("llama2/ids.json", "w") as f:
    f.write("[\n" + ",\n".join(json.dumps(i) for i in ids) + "\n]\n")
print(len(texts), "texts,", sum(len(i) for i in ids), "tokens (Llama 2's kind)")
