package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// metaspace is how a BPE tokenizer.json made from a SentencePiece model
// (Llama 2's, TinyLlama's) turns text into the words its BPE merges: the
// spaces replaced by ▁ and one put before the text (a Prepend and a
// Replace normalizer, or a Metaspace pre-tokenizer), each character
// outside the vocabulary given as its UTF-8 bytes (<0xXX>, the byte
// fallback SentencePiece applies and hftokenizer's BPE lacks), the runs
// of the others merged as one word each (split at ▁ where the Metaspace
// pre-tokenizer splits).
type metaspace struct {
	replace     [][2]string // in order
	prepend     string      // before each text segment
	metaPre     bool        // the prepend is a Metaspace pre-tokenizer\'s: not before a segment that starts with it
	first       bool        // prepend before the first segment only
	splitAt     string      // start a word at each of these ("": no split)
	vocab       map[string]int
	bytes       [256]int32
	byteOf      map[int32]byte // the byte of each byte token
	unknown     int32          // the unk_token's id, -1 if none
	unknownName string
	hasBytes    bool
}

// norm is the part of a normalizer metaspaceOf reads.
type norm struct {
	Type    string `json:"type"`
	Prepend string `json:"prepend"`
	Pattern *struct {
		String string `json:"String"`
		Regex  string `json:"Regex"`
	} `json:"pattern"`
	Content     string `json:"content"`
	Normalizers []norm `json:"normalizers"`
}

// metaspaceOf returns the metaspace steps of f, or nil for a tokenizer
// that is not a SentencePiece-made BPE with byte fallback (hftokenizer
// then runs it whole).
func metaspaceOf(f *file) (*metaspace, error) {
	var model struct {
		Type         string `json:"type"`
		ByteFallback bool   `json:"byte_fallback"`
		Unk          string `json:"unk_token"`
	}
	if err := json.Unmarshal(f.ModelRaw, &model); err != nil || model.Type != "BPE" || !model.ByteFallback {
		return nil, nil
	}
	m := &metaspace{unknown: -1}
	if len(f.Normalizer) > 0 && string(f.Normalizer) != "null" {
		var n norm
		if err := json.Unmarshal(f.Normalizer, &n); err != nil {
			return nil, fmt.Errorf("tokenizer.json: normalizer: %w", err)
		}
		steps := []norm{n}
		if n.Type == "Sequence" {
			steps = n.Normalizers
		}
		for _, s := range steps {
			switch {
			case s.Type == "Prepend":
				m.prepend = s.Prepend
			case s.Type == "Replace" && s.Pattern != nil && s.Pattern.Regex == "":
				m.replace = append(m.replace, [2]string{s.Pattern.String, s.Content})
			default:
				return nil, fmt.Errorf("a %s normalizer before a byte-fallback BPE is not supported (Prepend and Replace of a string are)", s.Type)
			}
		}
	}
	if p := f.PreTokenizer; p != nil {
		if p.Type != "Metaspace" {
			return nil, fmt.Errorf("a %s pre-tokenizer before a byte-fallback BPE is not supported (none, or Metaspace)", p.Type)
		}
		r := p.Replacement
		if r == "" {
			r = "\u2581"
		}
		m.replace = append(m.replace, [2]string{" ", r})
		m.metaPre = true
		switch p.PrependScheme {
		case "", "always":
			m.prepend = r
		case "first":
			m.prepend, m.first = r, true
		case "never":
		default:
			return nil, fmt.Errorf("a Metaspace pre-tokenizer's prepend_scheme %q; want always, first or never", p.PrependScheme)
		}
		if p.Split == nil || *p.Split {
			m.splitAt = r
		}
	}
	m.unknownName = model.Unk
	return m, nil
}

// index reads the ids of the byte tokens and of unk_token from vocab.
func (m *metaspace) index(vocab map[string]int) error {
	m.vocab = vocab
	m.hasBytes = true
	m.byteOf = map[int32]byte{}
	for b := range 256 {
		id, ok := vocab[fmt.Sprintf("<0x%02X>", b)]
		if !ok {
			m.hasBytes = false
			m.byteOf = nil
			break
		}
		m.bytes[b] = int32(id)
		m.byteOf[int32(id)] = byte(b)
	}
	if id, ok := vocab[m.unknownName]; ok {
		m.unknown = int32(id)
	}
	if !m.hasBytes && m.unknown < 0 {
		return fmt.Errorf("a byte-fallback BPE without the 256 byte tokens <0x00>…<0xFF> or an unk_token")
	}
	return nil
}

// encode returns the ids of text, its added tokens as themselves.
func (m *metaspace) encode(t *Tokenizer, text string) []int32 {
	var ids []int32
	for i, seg := range t.segments(text) {
		if seg.added {
			ids = append(ids, seg.id)
			continue
		}
		s := seg.text
		for _, r := range m.replace {
			s = strings.ReplaceAll(s, r[0], r[1])
		}
		if m.prepend != "" && (!m.first || i == 0) && !(m.metaPre && strings.HasPrefix(s, m.prepend)) {
			s = m.prepend + s
		}
		words := []string{s}
		if m.splitAt != "" {
			words = splitBefore(s, m.splitAt)
		}
		for _, w := range words {
			ids = m.word(t, w, ids)
		}
	}
	return ids
}

// word appends the ids of one word: the runs of vocabulary characters
// merged by t's BPE, each other character as its bytes (or unk).
func (m *metaspace) word(t *Tokenizer, w string, ids []int32) []int32 {
	start := 0
	flush := func(end int) {
		if end > start {
			ids = append(ids, int32s(t.plain.Encode(w[start:end]))...)
		}
	}
	for i := 0; i < len(w); {
		_, n := utf8.DecodeRuneInString(w[i:]) // 1 for a byte that is not UTF-8
		if _, ok := m.vocab[w[i:i+n]]; ok {
			i += n
			continue
		}
		flush(i)
		if !m.hasBytes {
			ids = append(ids, m.unknown)
		} else {
			for _, b := range []byte(w[i : i+n]) {
				ids = append(ids, m.bytes[b])
			}
		}
		i += n
		start = i
	}
	flush(len(w))
	return ids
}

// splitBefore splits s before each sep (the first word may lack it).
func splitBefore(s, sep string) []string {
	var out []string
	for {
		i := strings.Index(s[min(len(sep), len(s)):], sep)
		if i < 0 {
			return append(out, s)
		}
		i += min(len(sep), len(s))
		out, s = append(out, s[:i]), s[i:]
	}
}

// decode returns the text of ids: the byte tokens' bytes, the other
// pieces with ▁ as a space, the space the prepend put first taken off
// (what the decoders Replace, ByteFallback, Fuse and Strip do).
func (m *metaspace) decode(t *Tokenizer, ids []int32) string {
	space := ""
	for _, r := range m.replace {
		if r[0] == " " {
			space = r[1]
		}
	}
	var b []byte
	for _, id := range ids {
		if a, ok := t.addedContent(id); ok {
			b = append(b, a...)
			continue
		}
		if x, ok := m.byteOf[id]; ok {
			b = append(b, x)
			continue
		}
		piece, _ := t.plain.(interface{ IDToToken(int) (string, bool) }).IDToToken(int(id))
		if space != "" {
			piece = strings.ReplaceAll(piece, space, " ")
		}
		b = append(b, piece...)
	}
	s := string(b)
	if m.prepend != "" {
		s = strings.TrimPrefix(s, " ")
	}
	return s
}
