package bonsai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"slices"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/bonsai/synthetic"
)

// modelPath writes the tiny synthetic model (package bonsai/synthetic: the real layout,
// random weights) that the examples open in place of the real one, and returns its path
// and a function that removes it.
func modelPath() (path string, remove func()) {
	dir, err := os.MkdirTemp("", "bonsai-example-")
	if err != nil {
		log.Fatal(err)
	}
	path = filepath.Join(dir, "tiny.gguf")
	if err := synthetic.WriteFile(context.Background(), path); err != nil {
		log.Fatal(err)
	}
	return path, func() { os.RemoveAll(dir) }
}

// Open a model, then stream a reply to a chat message. The model here is a tiny synthetic
// one with random weights, so the example prints what does not depend on the text: the
// finish reason and the token counts.
func Example() {
	path, remove := modelPath()
	defer remove()

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

// Open maps the file and reads its configuration, tokenizer and chat template; options
// choose the backend, the threads and the context size.
func ExampleOpen() {
	path, remove := modelPath()
	defer remove()

	m, err := bonsai.Open(path, bonsai.WithThreads(2), bonsai.WithContextSize(2048))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	fmt.Println("architecture:", m.Architecture())
	fmt.Println("vocabulary:", m.Vocab())
	fmt.Println("context:", m.ContextSize())
	fmt.Println("backend:", m.Backend())
	// Output:
	// architecture: qwen35
	// vocabulary: 512
	// context: 2048
	// backend: cpu
}

// A session keeps the conversation: the next turn's prompt repeats the earlier turns,
// and Generate prefills only what the session does not already hold.
func ExampleSession_Generate() {
	path, remove := modelPath()
	defer remove()
	m, err := bonsai.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	s, err := m.NewSession()
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	ctx := context.Background()
	think := false
	opt := bonsai.GenerateOptions{MaxTokens: 8, Thinking: &think, SamplerOptions: bonsai.SamplerOptions{Greedy: true}}
	chat := []bonsai.Message{
		{Role: bonsai.RoleSystem, Content: "Be brief."},
		{Role: bonsai.RoleUser, Content: "Hello!"},
	}
	for turn := 1; turn <= 2; turn++ {
		p, err := m.Prepare(bonsai.Chat(chat...), opt)
		if err != nil {
			log.Fatal(err)
		}
		res, err := s.Generate(ctx, p).Result() // Result runs the generation to its end
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("turn %d: %s, earlier turns reused: %v\n", turn, res.FinishReason, res.Usage.CachedTokens > 0)
		chat = append(chat,
			bonsai.Message{Role: bonsai.RoleAssistant, Content: res.Text},
			bonsai.Message{Role: bonsai.RoleUser, Content: "And again?"})
	}
	// Output:
	// turn 1: length, earlier turns reused: false
	// turn 2: length, earlier turns reused: true
}

// Below Generate, Prefill feeds a prompt, Logits holds the scores of the next token,
// a Sampler draws it and Step feeds it back.
func ExampleSession_Step() {
	path, remove := modelPath()
	defer remove()
	m, err := bonsai.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	s, err := m.NewSession()
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	ctx := context.Background()
	prompt := m.Tokenizer().Encode("Once upon a time", false)
	smp, err := bonsai.NewSampler(m.Vocab(), bonsai.SamplerOptions{Temperature: 0.8, TopK: 40, Seed: 1})
	if err != nil {
		log.Fatal(err)
	}
	smp.Observe(prompt...) // the prompt counts for the repetition penalties
	if err := s.Prefill(ctx, prompt); err != nil {
		log.Fatal(err)
	}
	var out []int32
	for range 5 {
		tok := smp.Sample(s.Logits()) // one score per token of the vocabulary
		smp.Accept(tok)
		out = append(out, tok)
		if err := s.Step(ctx, tok); err != nil {
			log.Fatal(err)
		}
	}
	_ = m.Tokenizer().Decode(out) // the text
	fmt.Println("logits:", len(s.Logits()) == m.Vocab())
	fmt.Println("positions:", s.Len() == len(prompt)+len(out))
	// Output:
	// logits: true
	// positions: true
}

// Save writes a snapshot of a session; LoadSession turns it into a session that
// continues exactly as the saved one would.
func ExampleSession_Save() {
	path, remove := modelPath()
	defer remove()
	m, err := bonsai.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	s, err := m.NewSession()
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	ctx := context.Background()
	if err := s.Prefill(ctx, m.Tokenizer().Encode("A long shared prefix", false)); err != nil {
		log.Fatal(err)
	}
	var snap bytes.Buffer // or a file, to continue in another run
	if err := s.Save(&snap); err != nil {
		log.Fatal(err)
	}
	loaded, err := m.LoadSession(&snap)
	if err != nil {
		log.Fatal(err)
	}
	defer loaded.Close()

	const next = 42
	if err := s.Step(ctx, next); err != nil {
		log.Fatal(err)
	}
	if err := loaded.Step(ctx, next); err != nil {
		log.Fatal(err)
	}
	fmt.Println("same tokens:", slices.Equal(s.Tokens(), loaded.Tokens()))
	fmt.Println("same logits:", slices.Equal(s.Logits(), loaded.Logits()))
	// Output:
	// same tokens: true
	// same logits: true
}

// With a required tool choice the answer is a call of the tools, its arguments valid
// under the function's schema: a grammar masks the vocabulary at each step, so even the
// random synthetic model writes a well-formed call.
func ExampleGenerateOptions_tools() {
	path, remove := modelPath()
	defer remove()
	m, err := bonsai.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	s, err := m.NewSession()
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	weather := bonsai.Tool{
		Name:        "get_weather",
		Description: "The weather forecast of a city",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","maxLength":20},"days":{"type":"integer","minimum":1,"maximum":14}},"required":["city","days"],"additionalProperties":false}`),
	}
	one := false
	p, err := m.Prepare(bonsai.Chat(bonsai.Message{Role: bonsai.RoleUser, Content: "Weather in Paris this week?"}), bonsai.GenerateOptions{
		MaxTokens:         400,
		Tools:             []bonsai.Tool{weather},
		ToolChoice:        bonsai.ToolChoice{Mode: bonsai.ToolChoiceFunction, Name: "get_weather"},
		ParallelToolCalls: &one,
		SamplerOptions:    bonsai.SamplerOptions{Temperature: 1, TopK: 40},
	})
	if err != nil {
		log.Fatal(err)
	}
	res, err := s.Generate(context.Background(), p).Result()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("finish:", res.FinishReason)
	for _, call := range res.ToolCalls {
		var args struct {
			City string
			Days int
		}
		err := json.Unmarshal(call.Arguments, &args)
		fmt.Println("call:", call.Name, "arguments decode:", err == nil, "days in range:", args.Days >= 1 && args.Days <= 14)
		// A program runs the tool and answers with
		// bonsai.Message{Role: bonsai.RoleTool, ToolCallID: call.ID, Content: result}.
	}
	// Output:
	// finish: tool_calls
	// call: get_weather arguments decode: true days in range: true
}

// A JSON ResponseFormat constrains the answer to JSON valid under a schema.
func ExampleResponseFormat() {
	path, remove := modelPath()
	defer remove()
	m, err := bonsai.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	s, err := m.NewSession()
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	p, err := m.Prepare(bonsai.Text("The temperature as JSON:"), bonsai.GenerateOptions{
		MaxTokens: 200,
		ResponseFormat: &bonsai.ResponseFormat{
			Type:   bonsai.ResponseFormatJSONSchema,
			Schema: json.RawMessage(`{"type":"object","properties":{"unit":{"enum":["celsius","fahrenheit"]},"ok":{"type":"boolean"}},"required":["unit","ok"],"additionalProperties":false}`),
		},
		SamplerOptions: bonsai.SamplerOptions{Temperature: 1, TopK: 40},
	})
	if err != nil {
		log.Fatal(err)
	}
	res, err := s.Generate(context.Background(), p).Result()
	if err != nil {
		log.Fatal(err)
	}
	var v struct {
		Unit string `json:"unit"`
		OK   *bool  `json:"ok"`
	}
	err = json.Unmarshal([]byte(res.Text), &v)
	fmt.Println("finish:", res.FinishReason)
	fmt.Println("valid:", err == nil && (v.Unit == "celsius" || v.Unit == "fahrenheit") && v.OK != nil)
	// Output:
	// finish: stop
	// valid: true
}
