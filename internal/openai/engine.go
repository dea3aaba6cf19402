package openai

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/bonsai-go/sdk/bonsai"
)

// This file lets other APIs (internal/anthropic) run on the same sessions, queue and
// limits as the OpenAI endpoints: they validate their own requests and prepare them
// with Model.Prepare, then Execute the generation here.

// Model returns the model the server runs.
func (s *Server) Model() *bonsai.Model { return s.m }

// Execute waits for a session and runs p, a prompt of the server's model, on it, as the
// OpenAI endpoints do; endpoint names it in GenerationEnd. start is called before the
// first token (or at the end of a generation that yielded none; not at all when it
// fails first), tok with each report (false stops the generation). A generation whose
// ctx ends (the client left) has FinishCancelled and no error; the errors are
// ErrQueueFull, ErrShuttingDown and the generation's own.
func (s *Server) Execute(ctx context.Context, endpoint string, p *bonsai.Prompt, start func(), tok func(bonsai.Token) bool) (bonsai.Result, error) {
	res, _, err := s.execute(ctx, &job{endpoint: endpoint, p: p}, start, tok)
	return res, err
}

// Handle serves pattern (an exact path, e.g. "/v1/messages", or "/" for the root
// alone) with h, ahead of the OpenAI routes, with the same request log. Call it before
// serving.
func (s *Server) Handle(path string, h http.Handler) {
	if s.extra == nil {
		s.extra = map[string]http.Handler{}
	}
	s.extra[path] = h
}

// optionParams are the request parameters of the GenerateOptions fields Prepare may
// refuse.
var optionParams = map[string]string{
	"MaxTokens": "max_tokens", "TopLogProbs": "top_logprobs", "Temperature": "temperature", "TopK": "top_k",
	"TopP": "top_p", "MinP": "min_p", "RepeatPenalty": "repetition_penalty", "PresencePenalty": "presence_penalty",
	"FrequencyPenalty": "frequency_penalty", "ResponseFormat": "response_format", "ToolChoice": "tool_choice", "Tools": "tools",
}

// prepare prepares a job's generation, mapping Prepare's refusals to the parameter at
// fault: promptParam for the input.
func (s *Server) prepare(j *job, in bonsai.Input, opt bonsai.GenerateOptions) *apiError {
	p, err := s.m.Prepare(in, opt)
	if err == nil {
		j.p = p
		return nil
	}
	oe, isOption := errors.AsType[*bonsai.OptionError](err)
	switch {
	case errors.Is(err, bonsai.ErrContextFull):
		return invalid(j.promptParam, "This model's maximum context length is %d tokens, and your %s is longer: %v.",
			s.m.ContextSize(), j.promptParam, err).withCode("context_length_exceeded")
	case errors.Is(err, bonsai.ErrInvalidInput):
		return invalid(j.promptParam, "Invalid '%s': %v.", j.promptParam, err)
	case isOption:
		param := optionParams[oe.Option]
		switch {
		case oe.Option == "ResponseFormat" && errors.Is(err, bonsai.ErrInvalidSchema):
			param = "response_format.json_schema.schema"
		case oe.Option == "Tools" && oe.Tool >= 0 && errors.Is(err, bonsai.ErrInvalidSchema):
			param = fmt.Sprintf("tools[%d].function.parameters", oe.Tool)
		case oe.Option == "Tools" && oe.Tool >= 0:
			param = fmt.Sprintf("tools[%d].function.name", oe.Tool)
		case oe.Option == "ToolChoice" && opt.ToolChoice.Mode == bonsai.ToolChoiceFunction:
			param = "tool_choice.function.name"
		}
		e := invalid(param, "Invalid '%s': %v.", param, oe.Err)
		if errors.Is(err, bonsai.ErrInvalidSchema) {
			e.withCode("invalid_schema")
		}
		return e
	}
	return serverError("Could not prepare the generation: %v.", err)
}
