package openai

import (
	"errors"
	"fmt"

	"github.com/bonsai-go/sdk/bonsai"
)

// optionParams are the request parameters of the GenerateOptions fields Prepare may
// refuse.
var optionParams = map[string]string{
	"MaxTokens": "max_tokens", "TopLogProbs": "top_logprobs", "Temperature": "temperature", "TopK": "top_k",
	"TopP": "top_p", "MinP": "min_p", "RepeatPenalty": "repetition_penalty", "PresencePenalty": "presence_penalty",
	"FrequencyPenalty": "frequency_penalty", "ResponseFormat": "response_format", "ToolChoice": "tool_choice", "Tools": "tools",
	"Speculative": "speculative", // "mtp" on a model without an MTP head
}

// prepare prepares a job's generation, mapping Prepare's refusals to the parameter at
// fault: promptParam for the input.
func (s *api) prepare(j *job, in bonsai.Input, opt bonsai.GenerateOptions) *apiError {
	p, err := s.m.Prepare(in, opt)
	if err == nil {
		j.p = p
		return nil
	}
	oe, isOption := errors.AsType[*bonsai.OptionError](err)
	switch {
	case errors.Is(err, bonsai.ErrContextFull):
		// OpenAI's words, which clients look for ("maximum context length").
		n := "more"
		if tl, ok := errors.AsType[*bonsai.PromptTooLongError](err); ok {
			n = fmt.Sprint(tl.Tokens)
		}
		return invalid(j.promptParam, "This model's maximum context length is %d tokens. However, your %s resulted in %s tokens. Please reduce the length of the %[2]s.",
			s.m.ContextSize(), j.promptParam, n).withCode("context_length_exceeded")
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
		if j.param != nil {
			param = j.param(param)
		}
		e := invalid(param, "Invalid '%s': %v.", param, oe.Err)
		if errors.Is(err, bonsai.ErrInvalidSchema) {
			e.withCode("invalid_schema")
		}
		return e
	}
	return serverError("Could not prepare the generation: %v.", err)
}
