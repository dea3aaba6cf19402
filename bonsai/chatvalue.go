package bonsai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/ardanlabs/jinja"
)

// messageValue is a message as the chat template sees it: a dict in the order Hugging
// Face's apply_chat_template gets it from an OpenAI request.
func messageValue(msg Message) (jinja.Value, error) {
	v := jinja.NewDict()
	d := v.AsDict()
	d.Set("role", jinja.NewString(string(msg.Role)))
	d.Set("content", jinja.NewString(msg.Content))
	if msg.ReasoningContent != "" {
		d.Set("reasoning_content", jinja.NewString(msg.ReasoningContent))
	}
	if len(msg.ToolCalls) > 0 {
		calls := make([]jinja.Value, len(msg.ToolCalls))
		for i, c := range msg.ToolCalls {
			args := c.Arguments
			if len(bytes.TrimSpace(args)) == 0 {
				args = json.RawMessage("{}")
			}
			av, err := jsonValue(args)
			if err != nil {
				return jinja.Value{}, fmt.Errorf("tool call %d (%s): arguments: %w", i, c.Name, err)
			}
			if !av.IsDict() {
				return jinja.Value{}, fmt.Errorf("tool call %d (%s): arguments are not a JSON object", i, c.Name)
			}
			fn := jinja.NewDict()
			fn.AsDict().Set("name", jinja.NewString(c.Name))
			fn.AsDict().Set("arguments", av)
			cv := jinja.NewDict()
			if c.ID != "" {
				cv.AsDict().Set("id", jinja.NewString(c.ID))
			}
			cv.AsDict().Set("type", jinja.NewString("function"))
			cv.AsDict().Set("function", fn)
			calls[i] = cv
		}
		d.Set("tool_calls", jinja.NewList(calls))
	}
	if msg.ToolCallID != "" {
		d.Set("tool_call_id", jinja.NewString(msg.ToolCallID))
	}
	if msg.Name != "" {
		d.Set("name", jinja.NewString(msg.Name))
	}
	return v, nil
}

// toolsValue is the template's tools: OpenAI's shape for each tool.
func toolsValue(tools []Tool) ([]jinja.Value, error) {
	out := make([]jinja.Value, len(tools))
	for i, t := range tools {
		if t.Name == "" {
			return nil, fmt.Errorf("tool %d has no name", i)
		}
		fn := jinja.NewDict()
		fn.AsDict().Set("name", jinja.NewString(t.Name))
		if t.Description != "" {
			fn.AsDict().Set("description", jinja.NewString(t.Description))
		}
		if len(bytes.TrimSpace(t.Parameters)) > 0 {
			pv, err := jsonValue(t.Parameters)
			if err != nil {
				return nil, fmt.Errorf("tool %q: parameters: %w", t.Name, err)
			}
			fn.AsDict().Set("parameters", pv)
		}
		tv := jinja.NewDict()
		tv.AsDict().Set("type", jinja.NewString("function"))
		tv.AsDict().Set("function", fn)
		out[i] = tv
	}
	return out, nil
}

// jsonValue decodes JSON into a template value, keeping the order of object keys (as
// Python's json module does) and telling integers from floats.
func jsonValue(data []byte) (jinja.Value, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec, 0)
	if err != nil {
		return jinja.Value{}, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return jinja.Value{}, errors.New("text after the JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder, depth int) (jinja.Value, error) {
	if depth > 200 {
		return jinja.Value{}, errors.New("JSON nested too deep")
	}
	tok, err := dec.Token()
	if err != nil {
		return jinja.Value{}, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			v := jinja.NewDict()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return jinja.Value{}, err
				}
				item, err := decodeValue(dec, depth+1)
				if err != nil {
					return jinja.Value{}, err
				}
				v.AsDict().Set(kt.(string), item)
			}
			_, err := dec.Token()
			return v, err
		case '[':
			var items []jinja.Value
			for dec.More() {
				item, err := decodeValue(dec, depth+1)
				if err != nil {
					return jinja.Value{}, err
				}
				items = append(items, item)
			}
			_, err := dec.Token()
			return jinja.NewList(items), err
		}
		return jinja.Value{}, fmt.Errorf("unexpected %v", t)
	default:
		return jinja.FromGoValue(tok), nil
	}
}
