package gosrc_test

import (
	"testing"

	"github.com/extensor/extensor/dataset/gosrc"
)

func TestLoad(t *testing.T) {
	c, err := gosrc.Load(gosrc.Root())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d files (%d held out), %.1f MB training, %.1f MB validation", c.Root, c.Files, c.ValFiles, float64(len(c.Train))/1e6, float64(len(c.Val))/1e6)
	if len(c.Train) < 5e6 {
		t.Errorf("%d bytes of training text; want at least 5 MB", len(c.Train))
	}
	if c.ValFiles != c.Files/gosrc.ValEvery {
		t.Errorf("%d of %d files held out; want every %dth", c.ValFiles, c.Files, gosrc.ValEvery)
	}
	tok := gosrc.Tokens([]byte("é\x00"))
	if len(tok) != 3 || tok[0] != 0xc3 || tok[1] != 0xa9 || tok[2] != 0 {
		t.Errorf("Tokens(é\\x00) = %v; want the bytes [195 169 0]", tok)
	}
}
