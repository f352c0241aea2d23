"""Writes llama3-ids.json: the ids GPT-2's vocabulary and merges
(gpt2/tokenizer.json.gz) give the texts of texts.json when split first by
Llama 3's pre-tokenizer pattern (the Split before a ByteLevel without
use_regex in Llama 3's, Qwen2's and SmolLM2's tokenizer.json), as
Hugging Face's tokenizers apply it: the pattern through Python's `regex`
module (which has its lookaheads and case-insensitive groups), each piece
mapped to GPT-2's byte alphabet and merged by OpenAI's byte-level BPE
(the lowest-ranked pair first). Run from this directory with a Python
that imports regex: python3 llama3_reference.py (make
tokenizer-reference)."""

import gzip
import json

import regex

PATTERN = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


with gzip.open("gpt2/tokenizer.json.gz") as f:
    tok = json.load(f)
vocab = tok["model"]["vocab"]
ranks = {tuple(m.split(" ")): i for i, m in enumerate(tok["model"]["merges"])}
byte = bytes_to_unicode()


def bpe(piece):
    word = list(piece)
    while len(word) > 1:
        pairs = {(word[i], word[i + 1]) for i in range(len(word) - 1)}
        best = min(pairs, key=lambda p: ranks.get(p, float("inf")))
        if best not in ranks:
            break
        merged, i = [], 0
        while i < len(word):
            if i < len(word) - 1 and (word[i], word[i + 1]) == best:
                merged.append(word[i] + word[i + 1])
                i += 2
            else:
                merged.append(word[i])
                i += 1
        word = merged
    return [vocab[w] for w in word]


texts = json.load(open("texts.json"))
ids = [[i for piece in regex.findall(PATTERN, t) for i in bpe("".join(byte[b] for b in piece.encode()))] for t in texts]
with open("llama3-ids.json", "w") as f:
    f.write("[\n" + ",\n".join(json.dumps(i) for i in ids) + "\n]\n")
with open("llama3-pattern.txt", "w") as f:
    f.write(PATTERN + "\n")
print(len(texts), "texts,", sum(len(i) for i in ids), "tokens")
