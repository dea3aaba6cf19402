// Package openaitest checks the OpenAI API's responses for the tests of the packages
// that serve it: the events of a stream and the shape of an error.
package openaitest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// ModelName is the name the tests serve their model under.
const ModelName = "tiny"

// Client is the official OpenAI client pointed at the server at base, without retries.
func Client(base string, opts ...option.RequestOption) oai.Client {
	return oai.NewClient(append([]option.RequestOption{option.WithBaseURL(base + "/v1/"), option.WithAPIKey("unused"),
		option.WithMaxRetries(0)}, opts...)...)
}

// ChatParams asks for a greedy, seeded answer of at most maxTokens to prompt, after a
// short system prompt.
func ChatParams(prompt string, maxTokens int64) oai.ChatCompletionNewParams {
	return oai.ChatCompletionNewParams{
		Model:       ModelName,
		Messages:    []oai.ChatCompletionMessageParamUnion{oai.SystemMessage("Be brief."), oai.UserMessage(prompt)},
		Temperature: oai.Float(0),
		MaxTokens:   oai.Int(maxTokens),
		Seed:        oai.Int(7),
	}
}

// Usage is the usage object of a response.
type Usage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

// ReadEvents returns the data of each server-sent event of a stream.
func ReadEvents(r io.Reader) ([]string, error) {
	var events []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
		case strings.HasPrefix(line, "data: "):
			events = append(events, strings.TrimPrefix(line, "data: "))
		default:
			return events, fmt.Errorf("unexpected line %q", line)
		}
	}
	return events, sc.Err()
}

// Chunk is a chat.completion.chunk or text_completion as JSON has it, with the
// nulls kept apart from the empty values.
type Chunk struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta *struct {
			Role             *string `json:"role"`
			Content          *string `json:"content"`
			ReasoningContent *string `json:"reasoning_content"`
		} `json:"delta"`
		Text         *string         `json:"text"`
		Logprobs     json.RawMessage `json:"logprobs"`
		FinishReason *string         `json:"finish_reason"`
	} `json:"choices"`
	Usage *Usage `json:"usage"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// StreamSummary is what a well-formed stream said.
type StreamSummary struct {
	Content, Reasoning, Finish string
	Usage                      *Usage
	Chunks                     int
}

// CheckStream checks the event sequence of a streamed chat completion (chat) or
// completion: for a chat, the role in the first chunk's delta and in no other; content
// deltas; one chunk with the finish reason, after every delta; with usage, one chunk
// of usage and no choices after it; then [DONE], last. It returns what the stream said.
func CheckStream(events []string, chat, withUsage bool) (StreamSummary, error) {
	var s StreamSummary
	if len(events) == 0 || events[len(events)-1] != "[DONE]" {
		return s, fmt.Errorf("the stream does not end with [DONE]: %d events", len(events))
	}
	events = events[:len(events)-1]
	var id string
	var content, reasoning strings.Builder
	for i, e := range events {
		var c Chunk
		if err := json.Unmarshal([]byte(e), &c); err != nil {
			return s, fmt.Errorf("event %d: %v: %s", i, err, e)
		}
		if c.Error != nil {
			return s, fmt.Errorf("event %d: error %s", i, c.Error.Message)
		}
		wantObject := "text_completion"
		if chat {
			wantObject = "chat.completion.chunk"
		}
		if c.Object != wantObject || c.Model != ModelName {
			return s, fmt.Errorf("event %d: object %q model %q", i, c.Object, c.Model)
		}
		if i == 0 {
			id = c.ID
		} else if c.ID != id {
			return s, fmt.Errorf("event %d: id %q, the stream's is %q", i, c.ID, id)
		}
		if s.Usage != nil {
			return s, fmt.Errorf("event %d after the usage chunk", i)
		}
		if len(c.Choices) == 0 {
			if !withUsage || c.Usage == nil || s.Finish == "" {
				return s, fmt.Errorf("event %d: no choices, usage %v, finish %q", i, c.Usage, s.Finish)
			}
			s.Usage = c.Usage
			continue
		}
		if len(c.Choices) != 1 || c.Choices[0].Index != 0 {
			return s, fmt.Errorf("event %d: %d choices", i, len(c.Choices))
		}
		if c.Usage != nil {
			return s, fmt.Errorf("event %d: usage in a chunk with choices", i)
		}
		ch := c.Choices[0]
		if s.Finish != "" {
			return s, fmt.Errorf("event %d after the finish reason", i)
		}
		if ch.FinishReason != nil {
			s.Finish = *ch.FinishReason
		}
		if chat {
			if ch.Delta == nil {
				return s, fmt.Errorf("event %d: no delta", i)
			}
			if (ch.Delta.Role != nil) != (i == 0) || i == 0 && *ch.Delta.Role != "assistant" {
				return s, fmt.Errorf("event %d: role %v", i, ch.Delta.Role)
			}
			if ch.FinishReason != nil && (ch.Delta.Content != nil || ch.Delta.ReasoningContent != nil) {
				return s, fmt.Errorf("event %d: text with the finish reason", i)
			}
			if ch.Delta.Content != nil {
				content.WriteString(*ch.Delta.Content)
			}
			if ch.Delta.ReasoningContent != nil {
				reasoning.WriteString(*ch.Delta.ReasoningContent)
			}
		} else if ch.Text != nil {
			content.WriteString(*ch.Text)
		}
		s.Chunks++
	}
	if s.Finish != "stop" && s.Finish != "length" {
		return s, fmt.Errorf("finish reason %q", s.Finish)
	}
	if withUsage && s.Usage == nil {
		return s, fmt.Errorf("no usage chunk")
	}
	s.Content, s.Reasoning = content.String(), reasoning.String()
	return s, nil
}

// ErrorBody is an error response.
type ErrorBody struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}
