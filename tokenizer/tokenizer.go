package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
	esentencepiece "github.com/eliben/go-sentencepiece"
	"github.com/gomlx/go-huggingface/tokenizers/api"
	"github.com/gomlx/go-huggingface/tokenizers/hftokenizer"
	"github.com/gomlx/go-huggingface/tokenizers/sentencepiece"
)

// GPT2Pattern is the pre-tokenizer pattern of GPT-2 (what a ByteLevel
// pre-tokenizer with use_regex applies).
const GPT2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

// A Tokenizer encodes text into token ids and decodes ids into text. It
// is safe for use by several goroutines.
type Tokenizer struct {
	// lib is the whole pipeline with the post-processor's special tokens
	// and plain without them; with split set, both are the BPE of
	// byte-mapped pieces.
	lib, plain api.Tokenizer
	// known reports whether an id below size names a token.
	known func(id int) bool
	// split is the byte-level pre-tokenizer's pattern; nil: hftokenizer
	// pre-tokenizes.
	split         *regexp2.Regexp
	meta          *metaspace // SentencePiece-made BPE: the text's pieces made here, merged by lib
	sentencePiece bool       // lib is a SentencePiece model; template says what surrounds a text
	prefixSpace   bool       // byte-level: a space goes before text that starts without one
	added         []added
	template      []item // the special tokens around a text (the post-processor's single template)
	size          int

	// BOS, EOS and PAD are the ids of tokenizer_config.json's bos_token,
	// eos_token and pad_token, -1 where it names none.
	BOS, EOS, PAD int32
}

// added is an added token (special or not), matched in the raw text
// before any other step.
type added struct {
	content      string
	id           int32
	lstrip, rstr bool
}

// item is an element of a post-processor template: the text's ids
// (seq) or special ids.
type item struct {
	seq bool
	ids []int32
}

// Load returns the tokenizer of path: a model directory holding
// tokenizer.json (or, without it, a SentencePiece tokenizer.model) and,
// optionally, tokenizer_config.json; or a tokenizer.json file.
func Load(path string) (*Tokenizer, error) {
	file, config := path, ""
	if st, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	} else if st.IsDir() {
		file, config = filepath.Join(path, "tokenizer.json"), filepath.Join(path, "tokenizer_config.json")
		if _, err := os.Stat(file); errors.Is(err, os.ErrNotExist) {
			if _, err := os.Stat(filepath.Join(path, "tokenizer.model")); err == nil {
				return loadSentencePiece(filepath.Join(path, "tokenizer.model"), config)
			}
		}
	}
	tj, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	var cj []byte
	if config != "" {
		cj, err = os.ReadFile(config)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("tokenizer: %w", err)
		}
	}
	t, err := Parse(tj, cj)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", file, err)
	}
	return t, nil
}

// loadSentencePiece returns the tokenizer of a SentencePiece model file
// (go-huggingface's sentencepiece, over github.com/eliben/go-sentencepiece):
// Encode puts the BOS before the text unless tokenizer_config.json's
// add_bos_token is false, and the EOS after it if add_eos_token is true,
// as transformers' LlamaTokenizer does.
func loadSentencePiece(path, config string) (*Tokenizer, error) {
	var cfg struct {
		BOS    *bool `json:"add_bos_token"`
		EOS    bool  `json:"add_eos_token"`
		PadTok token `json:"pad_token"`
	}
	if b, err := os.ReadFile(config); err == nil {
		if err := json.Unmarshal(b, &cfg); err != nil {
			return nil, fmt.Errorf("tokenizer: %s: %w", config, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	t := &Tokenizer{BOS: -1, EOS: -1, PAD: -1}
	for _, special := range []bool{true, false} {
		proc, err := esentencepiece.NewProcessorFromPath(path)
		if err != nil {
			return nil, fmt.Errorf("tokenizer: %s: %w", path, err)
		}
		sp := &sentencepiece.Tokenizer{Processor: proc, Info: proc.ModelInfo()}
		if special {
			t.lib = sp
		} else {
			t.plain = sp
		}
		info := proc.ModelInfo()
		t.size = info.VocabularySize
		t.BOS, t.EOS, t.PAD = int32(info.BeginningOfSentenceID), int32(info.EndOfSentenceID), int32(info.PadID)
	}
	if cfg.PadTok != "" {
		// tokenizer_config.json may name a pad token the model lacks.
		t.PAD = -1
	}
	if t.BOS >= 0 && (cfg.BOS == nil || *cfg.BOS) {
		t.template = append(t.template, item{ids: []int32{t.BOS}})
	}
	t.template = append(t.template, item{seq: true})
	if cfg.EOS && t.EOS >= 0 {
		t.template = append(t.template, item{ids: []int32{t.EOS}})
	}
	t.known = func(int) bool { return true }
	t.sentencePiece = true
	// Only the text's ids come from the model; Encode adds the template.
	for _, sp := range []api.Tokenizer{t.lib, t.plain} {
		if err := sp.With(api.EncodeOptions{}); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// pre is the part of a pre_tokenizer the byte-level path reads.
type pre struct {
	Type           string `json:"type"`
	AddPrefixSpace bool   `json:"add_prefix_space"`
	UseRegex       *bool  `json:"use_regex"`
	Replacement    string `json:"replacement"`    // Metaspace
	PrependScheme  string `json:"prepend_scheme"` // Metaspace
	Split          *bool  `json:"split"`          // Metaspace
	Pattern        *struct {
		Regex, String string
	} `json:"pattern"`
	Behavior      string `json:"behavior"`
	Invert        bool   `json:"invert"`
	PreTokenizers []pre  `json:"pretokenizers"`
}

// post is the part of a post_processor the byte-level path reads.
type post struct {
	Type   string `json:"type"`
	Single []struct {
		SpecialToken *struct{ ID string } `json:"SpecialToken"`
		Sequence     *struct{ ID string } `json:"Sequence"`
	} `json:"single"`
	SpecialTokens map[string]struct {
		IDs []int32 `json:"ids"`
	} `json:"special_tokens"`
	Processors []post `json:"processors"`
}

// file is the part of tokenizer.json read here.
type file struct {
	AddedTokens []struct {
		ID             int32
		Content        string
		Lstrip, Rstrip bool
	} `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  *pre            `json:"pre_tokenizer"`
	PostProcessor *post           `json:"post_processor"`
	ModelRaw      json.RawMessage `json:"model"`
}

// token is tokenizer_config.json's form of a token: a string or an
// object with its content.
type token string

func (t *token) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*t = token(s)
		return nil
	}
	var o struct{ Content string }
	if err := json.Unmarshal(b, &o); err != nil {
		return fmt.Errorf("a token is a string or an object with a content: %s", b)
	}
	*t = token(o.Content)
	return nil
}

// Parse returns the tokenizer of tokenizer.json's content tj and
// tokenizer_config.json's content cj (nil when there is none).
func Parse(tj, cj []byte) (*Tokenizer, error) {
	var f file
	if err := json.Unmarshal(tj, &f); err != nil {
		return nil, fmt.Errorf("tokenizer.json: %w", err)
	}
	var cfg struct {
		BOS token `json:"bos_token"`
		EOS token `json:"eos_token"`
		PAD token `json:"pad_token"`
	}
	if cj != nil {
		if err := json.Unmarshal(cj, &cfg); err != nil {
			return nil, fmt.Errorf("tokenizer_config.json: %w", err)
		}
	}
	var model struct{ Type string }
	if err := json.Unmarshal(f.ModelRaw, &model); err != nil {
		return nil, fmt.Errorf("tokenizer.json: model: %w", err)
	}
	switch model.Type {
	case "BPE", "WordPiece", "Unigram":
	default:
		return nil, fmt.Errorf("model type %q; want BPE, WordPiece or Unigram", model.Type)
	}
	t := &Tokenizer{BOS: -1, EOS: -1, PAD: -1}
	pattern, prefix, byteLevel, err := byteLevelSplit(f.PreTokenizer)
	if err != nil {
		return nil, err
	}
	content := tj
	if !byteLevel {
		if t.meta, err = metaspaceOf(&f); err != nil {
			return nil, err
		}
	}
	if t.meta != nil {
		if t.template, err = templateOf(f.PostProcessor); err != nil {
			return nil, err
		}
		// hftokenizer merges runs of the vocabulary's characters, one
		// word each (a Split that never matches), and nothing else.
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(tj, &raw); err != nil {
			return nil, fmt.Errorf("tokenizer.json: %w", err)
		}
		raw["normalizer"], raw["post_processor"] = json.RawMessage("null"), json.RawMessage("null")
		raw["pre_tokenizer"] = json.RawMessage(`{"type": "Split", "pattern": {"Regex": "[^\\x00-\\x{10FFFF}]"}, "behavior": "Removed", "invert": false}`)
		raw["added_tokens"] = json.RawMessage("[]")
		if content, err = json.Marshal(raw); err != nil {
			return nil, err
		}
	}
	if byteLevel {
		if model.Type != "BPE" {
			return nil, fmt.Errorf("a byte-level pre-tokenizer before a %s model; want BPE", model.Type)
		}
		t.split, err = regexp2.Compile(pattern, regexp2.Unicode)
		if err != nil {
			return nil, fmt.Errorf("the pre-tokenizer's pattern %q: %w", pattern, err)
		}
		t.prefixSpace = prefix
		if t.template, err = templateOf(f.PostProcessor); err != nil {
			return nil, err
		}
		// hftokenizer sees byte-mapped pieces (no whitespace in them),
		// merged as one word each, and nothing else.
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(tj, &raw); err != nil {
			return nil, fmt.Errorf("tokenizer.json: %w", err)
		}
		if len(f.Normalizer) > 0 && string(f.Normalizer) != "null" {
			return nil, fmt.Errorf("a normalizer before a byte-level pre-tokenizer is not supported: %s", f.Normalizer)
		}
		for _, k := range []string{"normalizer", "pre_tokenizer", "post_processor"} {
			raw[k] = json.RawMessage("null")
		}
		raw["added_tokens"] = json.RawMessage("[]")
		if content, err = json.Marshal(raw); err != nil {
			return nil, err
		}
	}
	for _, a := range f.AddedTokens {
		t.added = append(t.added, added{content: a.Content, id: a.ID, lstrip: a.Lstrip, rstr: a.Rstrip})
	}
	slices.SortStableFunc(t.added, func(a, b added) int { return len(b.content) - len(a.content) })
	// Two copies, as hftokenizer's Encode reads its options from the
	// tokenizer (Encode is otherwise read-only: safe to share).
	for _, to := range []struct {
		lib     *api.Tokenizer
		special bool
	}{{&t.lib, !byteLevel && t.meta == nil}, {&t.plain, false}} {
		lib, err := hftokenizer.NewFromContent(&api.Config{BosToken: string(cfg.BOS), EosToken: string(cfg.EOS), PadToken: string(cfg.PAD)}, content)
		if err != nil {
			return nil, err
		}
		if err := lib.With(api.EncodeOptions{AddSpecialTokens: to.special}); err != nil {
			return nil, err
		}
		*to.lib = lib
		if byteLevel || t.meta != nil {
			t.plain = lib
			break
		}
	}
	hl := t.lib.(*hftokenizer.Tokenizer)
	for _, id := range hl.GetVocab() {
		t.size = max(t.size, id+1)
	}
	for _, a := range t.added { // tokens only in added_tokens (Llama 3's, Qwen2's)
		t.size = max(t.size, int(a.id)+1)
	}
	if t.meta != nil {
		if err := t.meta.index(hl.GetVocab()); err != nil {
			return nil, err
		}
	}
	t.known = func(id int) bool {
		_, ok := hl.IDToToken(id)
		return ok
	}
	for _, s := range []struct {
		name token
		id   *int32
	}{{cfg.BOS, &t.BOS}, {cfg.EOS, &t.EOS}, {cfg.PAD, &t.PAD}} {
		if s.name == "" {
			continue
		}
		if id, ok := t.addedID(string(s.name)); ok {
			*s.id = id
			continue
		}
		id, ok := hl.TokenToID(string(s.name))
		if !ok {
			return nil, fmt.Errorf("tokenizer_config.json names the token %q, not in the vocabulary", s.name)
		}
		*s.id = int32(id)
	}
	return t, nil
}

// byteLevelSplit returns the pattern that splits text before a
// byte-level BPE and whether a space is put before text: GPT-2's for a
// ByteLevel pre-tokenizer with use_regex; a Split's (behavior Isolated)
// followed by a ByteLevel without it. ok is false for other
// pre-tokenizers, which hftokenizer applies.
func byteLevelSplit(p *pre) (pattern string, prefix, ok bool, err error) {
	if p == nil {
		return "", false, false, nil
	}
	switch p.Type {
	case "ByteLevel":
		if p.UseRegex != nil && !*p.UseRegex {
			return "", false, false, fmt.Errorf("a ByteLevel pre-tokenizer without use_regex and without a Split before it is not supported")
		}
		return GPT2Pattern, p.AddPrefixSpace, true, nil
	case "Sequence":
		if len(p.PreTokenizers) == 2 && p.PreTokenizers[0].Type == "Split" && p.PreTokenizers[1].Type == "ByteLevel" {
			s, b := p.PreTokenizers[0], p.PreTokenizers[1]
			if b.UseRegex == nil || *b.UseRegex || s.Invert || !strings.EqualFold(s.Behavior, "Isolated") || s.Pattern == nil {
				return "", false, false, fmt.Errorf("a Split (behavior %q, invert %v) then a ByteLevel (use_regex %v): want an isolating, uninverted pattern and a ByteLevel without use_regex", s.Behavior, s.Invert, b.UseRegex)
			}
			pat := s.Pattern.Regex
			if pat == "" {
				pat = regexp2.Escape(s.Pattern.String)
			}
			return pat, b.AddPrefixSpace, true, nil
		}
		for _, c := range p.PreTokenizers {
			if c.Type == "ByteLevel" {
				return "", false, false, fmt.Errorf("a Sequence pre-tokenizer with a ByteLevel other than after one Split is not supported")
			}
		}
	}
	return "", false, false, nil
}

// templateOf returns the single template of a byte-level tokenizer's
// post-processor: none for ByteLevel (offsets only), TemplateProcessing's
// single, Sequence's processors in turn.
func templateOf(p *post) ([]item, error) {
	if p == nil {
		return nil, nil
	}
	switch p.Type {
	case "ByteLevel":
		return nil, nil
	case "Sequence":
		var t []item
		for i := range p.Processors {
			s, err := templateOf(&p.Processors[i])
			if err != nil {
				return nil, err
			}
			if s != nil {
				if t != nil {
					return nil, fmt.Errorf("a Sequence post-processor with two templates")
				}
				t = s
			}
		}
		return t, nil
	case "TemplateProcessing":
		var t []item
		for _, s := range p.Single {
			switch {
			case s.Sequence != nil:
				t = append(t, item{seq: true})
			case s.SpecialToken != nil:
				st, ok := p.SpecialTokens[s.SpecialToken.ID]
				if !ok {
					return nil, fmt.Errorf("the post-processor's template names %q, not among its special tokens", s.SpecialToken.ID)
				}
				t = append(t, item{ids: st.IDs})
			}
		}
		return t, nil
	}
	return nil, fmt.Errorf("post-processor %q before a byte-level BPE is not supported", p.Type)
}

// VocabSize returns the number of ids: one more than the largest.
func (t *Tokenizer) VocabSize() int { return t.size }

// Encode returns the ids of text with the special tokens that the
// tokenizer's post-processor puts around it (a BOS, for Llama's), as
// transformers' tokenizer(text) gives them.
func (t *Tokenizer) Encode(text string) []int32 {
	if t.split == nil && t.meta == nil && !t.sentencePiece {
		return int32s(t.lib.Encode(text))
	}
	ids := t.EncodeText(text)
	if t.template == nil {
		return ids
	}
	var out []int32
	for _, it := range t.template {
		if it.seq {
			out = append(out, ids...)
		} else {
			out = append(out, it.ids...)
		}
	}
	return out
}

// EncodeText returns the ids of text alone, without the post-processor's
// special tokens (add_special_tokens=False).
func (t *Tokenizer) EncodeText(text string) []int32 {
	if t.meta != nil {
		return t.meta.encode(t, text)
	}
	if t.split == nil {
		return int32s(t.plain.Encode(text))
	}
	var ids []int32
	for _, seg := range t.segments(text) {
		if seg.added {
			ids = append(ids, seg.id)
			continue
		}
		s := seg.text
		if t.prefixSpace && s != "" && s[0] != ' ' {
			s = " " + s
		}
		for m, _ := t.split.FindStringMatch(s); m != nil; m, _ = t.split.FindNextMatch(m) {
			ids = append(ids, int32s(t.lib.Encode(toBytes(m.String())))...)
		}
	}
	return ids
}

// segment is a run of text or an added token.
type segment struct {
	text  string
	added bool
	id    int32
}

// segments splits text on the added tokens, the longest first at each
// position, stripping the whitespace on a token's lstrip or rstrip side.
func (t *Tokenizer) segments(text string) []segment {
	var out []segment
	start := 0
	for i := 0; i < len(text); {
		var hit *added
		for k := range t.added {
			if strings.HasPrefix(text[i:], t.added[k].content) && t.added[k].content != "" {
				hit = &t.added[k]
				break
			}
		}
		if hit == nil {
			i++
			continue
		}
		before := text[start:i]
		if hit.lstrip {
			before = strings.TrimRightFunc(before, unicode.IsSpace)
		}
		if before != "" {
			out = append(out, segment{text: before})
		}
		out = append(out, segment{added: true, id: hit.id})
		i += len(hit.content)
		if hit.rstr {
			for i < len(text) {
				r, n := utf8.DecodeRuneInString(text[i:])
				if !unicode.IsSpace(r) {
					break
				}
				i += n
			}
		}
		start = i
	}
	if start < len(text) {
		out = append(out, segment{text: text[start:]})
	}
	return out
}

// Decode returns the text of ids; an id outside the vocabulary is an
// error.
func (t *Tokenizer) Decode(ids []int32) (string, error) {
	in := make([]int, len(ids))
	for i, id := range ids {
		if id < 0 || int(id) >= t.size {
			return "", fmt.Errorf("tokenizer: Decode: id %d at %d; want one of the %d of the vocabulary", id, i, t.size)
		}
		if !t.known(int(id)) {
			if _, ok := t.addedContent(id); !ok {
				return "", fmt.Errorf("tokenizer: Decode: id %d at %d is no token of the vocabulary", id, i)
			}
		}
		in[i] = int(id)
	}
	if t.meta != nil {
		return t.meta.decode(t, ids), nil
	}
	if t.split == nil {
		return t.lib.Decode(in), nil
	}
	// Byte-level: the added tokens as written, the rest through the byte
	// alphabet.
	var b strings.Builder
	var run []int
	flush := func() {
		if len(run) > 0 {
			b.WriteString(t.lib.Decode(run))
			run = run[:0]
		}
	}
	for _, id := range in {
		if a, ok := t.addedContent(int32(id)); ok {
			flush()
			b.WriteString(a)
			continue
		}
		run = append(run, id)
	}
	flush()
	return b.String(), nil
}

// addedID returns the id of the added token content.
func (t *Tokenizer) addedID(content string) (int32, bool) {
	for _, a := range t.added {
		if a.content == content {
			return a.id, true
		}
	}
	return 0, false
}

// addedContent returns the content of the added token id.
func (t *Tokenizer) addedContent(id int32) (string, bool) {
	for _, a := range t.added {
		if a.id == id {
			return a.content, true
		}
	}
	return "", false
}

func int32s(v []int) []int32 {
	out := make([]int32, len(v))
	for i, x := range v {
		out[i] = int32(x)
	}
	return out
}

// byteRune maps each byte to the rune that stands for it in a byte-level
// BPE's vocabulary (GPT-2's bytes_to_unicode): printable Latin-1 bytes
// stand for themselves, the others for 256 onwards in order.
var byteRune = func() (m [256]rune) {
	n := 0
	for b := range 256 {
		if b >= '!' && b <= '~' || b >= 0xa1 && b <= 0xac || b >= 0xae {
			m[b] = rune(b)
		} else {
			m[b] = rune(256 + n)
			n++
		}
	}
	return m
}()

// toBytes returns s in the byte alphabet.
func toBytes(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		b.WriteRune(byteRune[s[i]])
	}
	return b.String()
}
