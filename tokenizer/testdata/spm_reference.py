"""Trains a small SentencePiece model here (Debian's python3-sentencepiece:
BPE with byte fallback, without a dummy prefix and with <bos> and <eos>,
Gemma's kind, which github.com/eliben/go-sentencepiece reads; 400 pieces,
on the first 200 texts of texts.json) into sentencepiece/tokenizer.model,
and writes sentencepiece/ids.json: its encoding of each text. Run from
this directory: python3 spm_reference.py (make tokenizer-reference)."""

import io
import json

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
