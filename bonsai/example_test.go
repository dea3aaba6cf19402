package bonsai_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/synth"
)

// Open a model, then stream a reply to a chat message. The model here is a tiny synthetic
// one with random weights, so the example prints what does not depend on the text: the
// finish reason and the token counts.
func Example() {
	dir, err := os.MkdirTemp("", "bonsai-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "tiny.gguf")
	cfg, _ := synth.Preset("tiny")
	if err := synth.WriteFile(context.Background(), path, synth.Options{Config: cfg, Seed: 1}, nil); err != nil {
		log.Fatal(err)
	}

	m, err := bonsai.Open(path) // a real model: bonsai.Open("Ternary-Bonsai-2-27B-PQ2_0.gguf")
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	s, err := m.NewSession()
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	think := false
	p, err := m.Prepare(bonsai.Chat(bonsai.Message{Role: bonsai.RoleUser, Content: "Name three colours."}),
		bonsai.GenerateOptions{MaxTokens: 16, Thinking: &think, SamplerOptions: bonsai.SamplerOptions{Temperature: 0.7, TopP: 0.8, Seed: 42}})
	if err != nil {
		log.Fatal(err) // a bad input or option: nothing has run
	}
	g := s.Generate(context.Background(), p)
	streamed := 0
	for tok, err := range g.Tokens() {
		if err != nil {
			log.Fatal(err)
		}
		_ = tok.Text // a program would print it: fmt.Print(tok.Text)
		if tok.ID != bonsai.NoToken {
			streamed++
		}
	}
	res, err := g.Result()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("finish:", res.FinishReason)
	fmt.Println("tokens:", res.Usage.CompletionTokens, "streamed:", streamed)
	fmt.Println("prompt tokens:", res.Usage.PromptTokens, p.Len())
	// Output:
	// finish: length
	// tokens: 16 streamed: 16
	// prompt tokens: 27 27
}
