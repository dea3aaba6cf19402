package tokenizer_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/bonsai-go/sdk/bonsai/tokenizer"
	"github.com/bonsai-go/sdk/gguf"
)

func Example() {
	// A model file works as well: gguf.Open("Ternary-Bonsai-2.gguf").
	f, err := gguf.Parse(qwen3Vocab())
	if err != nil {
		log.Fatal(err)
	}
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		log.Fatal(err)
	}

	prompt := "<|im_start|>user\nHello, world!<|im_end|>\n"
	ids := tok.Encode(prompt, true) // true: <|im_start|> is one control token
	fmt.Println(ids)
	for _, id := range ids[:4] {
		fmt.Printf("%d %q %s\n", id, tok.Piece(id), tok.Type(id))
	}
	fmt.Println(tok.Decode(ids) == prompt)
	fmt.Println(tok.IsEndOfGeneration(ids[len(ids)-2]))
	fmt.Println(len(tok.Encode(prompt, false)))

	// Streaming: 世 is three bytes; a StreamDecoder returns it whole.
	d := tok.NewStreamDecoder()
	for _, b := range []byte("世") {
		id, _ := tok.ByteToken(b)
		fmt.Printf("%q ", d.Add(id))
	}
	fmt.Println()
	// Output:
	// [151644 872 198 9707 11 1879 0 151645 198]
	// 151644 "<|im_start|>" control
	// 872 "user" normal
	// 198 "\n" normal
	// 9707 "Hello" normal
	// true
	// true
	// 17
	// "" "" "世"
}

// qwen3Vocab returns the test vocabulary: Qwen3's tokenizer as a vocabulary-only GGUF.
func qwen3Vocab() []byte {
	data, err := os.ReadFile("testdata/qwen3-vocab.gguf.gz")
	if err != nil {
		log.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		log.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		log.Fatal(err)
	}
	return raw
}
