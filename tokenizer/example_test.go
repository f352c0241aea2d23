package tokenizer_test

import (
	"fmt"

	"github.com/extensor/extensor/tokenizer"
)

func Example() {
	// The tiny GPT-2's tokenizer: GPT-2's, cut to its first merges.
	tok, err := tokenizer.Load("../models/gpt2/testdata/tiny")
	if err != nil {
		fmt.Println(err)
		return
	}
	ids := tok.Encode("the cat sat")
	text, _ := tok.Decode(ids)
	fmt.Println(ids, text == "the cat sat", tok.EOS)
	// Output: [83 258 269 265 264 265] true 511
}
