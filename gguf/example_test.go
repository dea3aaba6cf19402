package gguf_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"log"
	"math"

	"github.com/bonsai-go/sdk/gguf"
)

func Example() {
	kv := []gguf.KV{
		{Key: "general.architecture", Value: gguf.MustValue("qwen35")},
		{Key: "qwen35.block_count", Value: gguf.MustValue(uint32(64))},
		{Key: "tokenizer.ggml.tokens", Value: gguf.MustValue([]string{"<s>", "hello", "world"})},
	}
	tensors := []gguf.TensorInfo{
		{Name: "output_norm.weight", Type: gguf.TypeF32, Shape: []int64{4}},
	}
	norm := make([]byte, 4*4)
	for i := range 4 {
		binary.LittleEndian.PutUint32(norm[4*i:], math.Float32bits(1))
	}

	var buf bytes.Buffer
	w, err := gguf.NewWriter(&buf, kv, tensors)
	if err != nil {
		log.Fatal(err)
	}
	if err := w.WriteTensor("output_norm.weight", norm); err != nil {
		log.Fatal(err)
	}
	if err := w.Close(); err != nil {
		log.Fatal(err)
	}

	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		log.Fatal(err)
	}
	blocks, err := f.Uint32("qwen35.block_count")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(f.Architecture(), blocks)
	_, err = f.String("qwen35.block_count")
	fmt.Println(err)
	tokens, _ := f.Lookup("tokenizer.ggml.tokens")
	fmt.Println(tokens)
	ti, _ := f.Tensor("output_norm.weight")
	data, _ := f.TensorData("output_norm.weight")
	fmt.Println(ti.Type, ti.Shape, len(data))
	// Output:
	// qwen35 64
	// gguf: key "qwen35.block_count": want string, have uint32
	// ["<s>" "hello" "world"]
	// F32 [4] 16
}

// A tensor too large to hold in memory is streamed in pieces.
func ExampleWriter_BeginTensor() {
	tensors := []gguf.TensorInfo{
		{Name: "token_embd.weight", Type: gguf.TypePQ2_0, Shape: []int64{256, 3}},
	}
	var buf bytes.Buffer
	w, err := gguf.NewWriter(&buf, nil, tensors)
	if err != nil {
		log.Fatal(err)
	}
	tw, err := w.BeginTensor("token_embd.weight")
	if err != nil {
		log.Fatal(err)
	}
	rowBytes, _ := gguf.TypePQ2_0.RowBytes(256)
	for range 3 {
		row := make([]byte, rowBytes)
		if _, err := tw.Write(row); err != nil {
			log.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		log.Fatal(err)
	}
	fmt.Println(rowBytes, w.Tensors()[0].Offset, buf.Len()%32)
	// Output:
	// 68 0 0
}
