package openai

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/serve"
	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// respParams asks for a greedy, seeded response of at most maxTokens to prompt.
func respParams(prompt string, maxTokens int64) responses.ResponseNewParams {
	return responses.ResponseNewParams{
		Model:           modelName,
		Input:           responses.ResponseNewParamsInputUnion{OfString: oai.String(prompt)},
		Instructions:    oai.String("Be brief."),
		Temperature:     oai.Float(0),
		MaxOutputTokens: oai.Int(maxTokens),
	}
}

// seed sets the extension parameter seed, which the Responses API lacks.
func seed(n int) option.RequestOption { return option.WithJSONSet("seed", n) }

// sseEvent is one event of a stream as it came: its name and its data.
type sseEvent struct {
	name string
	data string
}

// readNamedEvents reads a stream's events, with their event: names.
func readNamedEvents(t *testing.T, body string) []sseEvent {
	t.Helper()
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.data != "" {
				out = append(out, cur)
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data = strings.TrimPrefix(line, "data: ")
		default:
			t.Fatalf("unexpected line %q", line)
		}
	}
	require.NoError(t, sc.Err())
	require.Empty(t, cur.data, "the last event is not terminated")
	return out
}

// streamed is what a stream's events add up to.
type streamed struct {
	final *responses.Response // the response of the terminal event
	items []map[string]any    // the output items, rebuilt from the deltas
	types []string            // the event types, in order
}

// accumulate checks a Responses stream and rebuilds its output from the events alone:
// every event named as its type, sequence numbers 0, 1, 2…; response.created and
// response.in_progress first; each item added, its parts and deltas, its done events
// with the text the deltas made, done; the terminal event last.
func accumulate(t *testing.T, body string) streamed {
	t.Helper()
	events := readNamedEvents(t, body)
	require.GreaterOrEqual(t, len(events), 3)
	var s streamed
	var texts []*strings.Builder
	open := -1
	for i, e := range events {
		var ev responses.ResponseStreamEventUnion
		require.NoError(t, json.Unmarshal([]byte(e.data), &ev), e.data)
		require.Equal(t, ev.Type, e.name, "the event's name is its type")
		require.Equal(t, int64(i), ev.SequenceNumber, e.data)
		s.types = append(s.types, ev.Type)
		checkEvent(t, e.data, ev.Type)
		switch {
		case i == 0:
			require.Equal(t, "response.created", ev.Type)
			require.Equal(t, responses.ResponseStatusInProgress, ev.Response.Status)
			require.Empty(t, ev.Response.Output)
			continue
		case i == 1:
			require.Equal(t, "response.in_progress", ev.Type)
			continue
		case i == len(events)-1:
			require.Contains(t, []string{"response.completed", "response.incomplete"}, ev.Type)
			require.Equal(t, -1, open, "an item is still open at the end")
			r := ev.Response
			s.final = &r
			continue
		}
		switch ev.Type {
		case "response.output_item.added":
			require.Equal(t, -1, open, "an item added while another is open")
			require.Equal(t, int64(len(s.items)), ev.OutputIndex)
			var item map[string]any
			require.NoError(t, json.Unmarshal([]byte(ev.Item.RawJSON()), &item))
			require.Equal(t, "in_progress", item["status"])
			s.items = append(s.items, item)
			texts = append(texts, &strings.Builder{})
			open = len(s.items) - 1
			if item["type"] == "function_call" {
				require.Equal(t, "", item["arguments"])
			}
		case "response.content_part.added", "response.content_part.done":
			require.Equal(t, int64(open), ev.OutputIndex)
			require.Equal(t, s.items[open]["id"], ev.ItemID)
			require.Zero(t, ev.ContentIndex)
			if ev.Type == "response.content_part.done" {
				assert.Equal(t, texts[open].String(), ev.Part.Text)
			} else {
				assert.Empty(t, ev.Part.Text)
			}
		case "response.output_text.delta", "response.reasoning_text.delta", "response.function_call_arguments.delta":
			require.Equal(t, int64(open), ev.OutputIndex)
			require.Equal(t, s.items[open]["id"], ev.ItemID)
			want := map[string]string{"response.output_text.delta": "message", "response.reasoning_text.delta": "reasoning",
				"response.function_call_arguments.delta": "function_call"}[ev.Type]
			require.Equal(t, want, s.items[open]["type"], ev.Type)
			require.NotEmpty(t, ev.Delta)
			texts[open].WriteString(ev.Delta)
		case "response.output_text.done", "response.reasoning_text.done":
			require.Equal(t, int64(open), ev.OutputIndex)
			assert.Equal(t, texts[open].String(), ev.Text)
		case "response.function_call_arguments.done":
			require.Equal(t, int64(open), ev.OutputIndex)
			assert.Equal(t, texts[open].String(), ev.Arguments)
		case "response.output_item.done":
			require.Equal(t, int64(open), ev.OutputIndex)
			var item map[string]any
			require.NoError(t, json.Unmarshal([]byte(ev.Item.RawJSON()), &item))
			require.Equal(t, s.items[open]["id"], item["id"])
			s.items[open] = item
			open = -1
		default:
			t.Fatalf("event %d: unexpected %s", i, ev.Type)
		}
	}
	// The items as the deltas made them are the final response's.
	require.Len(t, s.final.Output, len(s.items))
	for i, item := range s.items {
		var final map[string]any
		require.NoError(t, json.Unmarshal([]byte(s.final.Output[i].RawJSON()), &final))
		assert.Equal(t, item, final)
		text := texts[i].String()
		switch item["type"] {
		case "message":
			assert.Equal(t, text, s.final.Output[i].AsMessage().Content[0].Text)
		case "reasoning":
			assert.Equal(t, text, s.final.Output[i].AsReasoning().Content[0].Text)
		case "function_call":
			assert.Equal(t, text, s.final.Output[i].AsFunctionCall().Arguments)
		}
	}
	return s
}

// eventTypes are openai-go's types of the events this server sends.
var eventTypes = map[string]reflect.Type{
	"response.created":                       reflect.TypeFor[responses.ResponseCreatedEvent](),
	"response.in_progress":                   reflect.TypeFor[responses.ResponseInProgressEvent](),
	"response.completed":                     reflect.TypeFor[responses.ResponseCompletedEvent](),
	"response.incomplete":                    reflect.TypeFor[responses.ResponseIncompleteEvent](),
	"response.output_item.added":             reflect.TypeFor[responses.ResponseOutputItemAddedEvent](),
	"response.output_item.done":              reflect.TypeFor[responses.ResponseOutputItemDoneEvent](),
	"response.content_part.added":            reflect.TypeFor[responses.ResponseContentPartAddedEvent](),
	"response.content_part.done":             reflect.TypeFor[responses.ResponseContentPartDoneEvent](),
	"response.output_text.delta":             reflect.TypeFor[responses.ResponseTextDeltaEvent](),
	"response.output_text.done":              reflect.TypeFor[responses.ResponseTextDoneEvent](),
	"response.reasoning_text.delta":          reflect.TypeFor[responses.ResponseReasoningTextDeltaEvent](),
	"response.reasoning_text.done":           reflect.TypeFor[responses.ResponseReasoningTextDoneEvent](),
	"response.function_call_arguments.delta": reflect.TypeFor[responses.ResponseFunctionCallArgumentsDeltaEvent](),
	"response.function_call_arguments.done":  reflect.TypeFor[responses.ResponseFunctionCallArgumentsDoneEvent](),
	"error":                                  reflect.TypeFor[responses.ResponseErrorEvent](),
}

// checkEvent checks an event's fields against openai-go's type of it, and the response
// or item it carries.
func checkEvent(t *testing.T, data, typ string) {
	t.Helper()
	var raw map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(data), &raw))
	rt, ok := eventTypes[typ]
	if !assert.True(t, ok, "unknown event type %q", typ) {
		return
	}
	checkFields(t, rt.Name(), raw, rt, "required")
	if r, ok := raw["response"]; ok && (typ == "response.completed" || typ == "response.incomplete") {
		checkRequired(t, string(r))
	}
	if item, ok := raw["item"]; ok {
		checkItem(t, item)
	}
}

// withoutIDs is a response's output with the item ids blanked, to compare two
// generations.
func withoutIDs(t *testing.T, r *responses.Response) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, item := range r.Output {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(item.RawJSON()), &m))
		require.NotEmpty(t, m["id"])
		delete(m, "id")
		if m["type"] == "function_call" {
			require.NotEmpty(t, m["call_id"])
			delete(m, "call_id")
		}
		out = append(out, m)
	}
	return out
}

// TestResponses: a text response, whole and streamed; the stream's events add up to the
// whole response; the stored response is served by GET and removed by DELETE.
func TestResponses(t *testing.T) {
	_, ts := newTestServer(t, tinyModel, serve.Config{})
	c, rec := client(ts)
	ctx := context.Background()
	p := respParams("Why is the sky blue?", 12)

	whole, err := c.Responses.New(ctx, p, seed(7))
	require.NoError(t, err)
	body := rec.last()
	assert.True(t, strings.HasPrefix(whole.ID, "resp_"), whole.ID)
	assert.Equal(t, "response", string(whole.Object))
	assert.Equal(t, modelName, whole.Model)
	assert.Contains(t, []responses.ResponseStatus{"completed", "incomplete"}, whole.Status)
	require.Len(t, whole.Output, 1)
	msg := whole.Output[0].AsMessage()
	assert.Equal(t, "message", whole.Output[0].Type)
	assert.True(t, strings.HasPrefix(msg.ID, "msg_"), msg.ID)
	assert.Equal(t, "assistant", string(msg.Role))
	require.Len(t, msg.Content, 1)
	assert.Equal(t, "output_text", msg.Content[0].Type)
	assert.NotEmpty(t, whole.OutputText())
	assert.True(t, msg.Content[0].JSON.Annotations.Valid(), "annotations: [] is sent")
	assert.Equal(t, "Be brief.", whole.Instructions.OfString)
	u := whole.Usage
	assert.Positive(t, u.InputTokens)
	assert.Positive(t, u.OutputTokens)
	assert.LessOrEqual(t, u.OutputTokens, int64(12))
	assert.Equal(t, u.InputTokens+u.OutputTokens, u.TotalTokens)
	checkRequired(t, body)

	// Streamed, the same seed gives the same output.
	stream := c.Responses.NewStreaming(ctx, p, seed(7))
	var types []string
	for stream.Next() {
		types = append(types, stream.Current().Type)
	}
	require.NoError(t, stream.Err())
	s := accumulate(t, rec.last())
	assert.Equal(t, s.types, types, "the client read every event")
	assert.Equal(t, []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"}, s.types[:4])
	n := len(s.types)
	assert.Equal(t, []string{"response.output_text.done", "response.content_part.done", "response.output_item.done"}, s.types[n-4:n-1])
	assert.Equal(t, "response."+string(whole.Status), s.types[n-1])
	assert.Equal(t, withoutIDs(t, whole), withoutIDs(t, s.final))
	assert.Equal(t, whole.Usage.OutputTokens, s.final.Usage.OutputTokens)
	assert.Equal(t, whole.Usage.InputTokens, s.final.Usage.InputTokens)
	assert.NotEqual(t, whole.ID, s.final.ID)

	// Another seed, at a temperature, gives another text: the comparison above can fail.
	p.Temperature = oai.Float(1.5)
	other, err := c.Responses.New(ctx, p, seed(8))
	require.NoError(t, err)
	assert.NotEqual(t, withoutIDs(t, whole), withoutIDs(t, other))

	// GET returns the stored response; DELETE removes it.
	got, err := c.Responses.Get(ctx, whole.ID, responses.ResponseGetParams{})
	require.NoError(t, err)
	assert.JSONEq(t, body, rec.last())
	assert.Equal(t, whole.OutputText(), got.OutputText())
	err = c.Responses.Delete(ctx, whole.ID)
	require.NoError(t, err)
	_, err = c.Responses.Get(ctx, whole.ID, responses.ResponseGetParams{})
	var apiErr *oai.Error
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusNotFound, apiErr.StatusCode)
}

// checkRequired checks that a response body has every field openai-go's Response type
// declares required or nullable, and so do its output items and usage.
func checkRequired(t *testing.T, body string) {
	t.Helper()
	var raw map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(body), &raw))
	checkFields(t, "Response", raw, reflect.TypeFor[responses.Response](), "required", "nullable")
	var usage map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw["usage"], &usage))
	checkFields(t, "ResponseUsage", usage, reflect.TypeFor[responses.ResponseUsage](), "required")
	var items []json.RawMessage
	require.NoError(t, json.Unmarshal(raw["output"], &items))
	for _, item := range items {
		checkItem(t, item)
	}
}

// checkItem checks an output item's fields against openai-go's type of it.
func checkItem(t *testing.T, raw json.RawMessage) {
	t.Helper()
	var item map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &item))
	var typ string
	require.NoError(t, json.Unmarshal(item["type"], &typ))
	{
		switch typ {
		case "message":
			checkFields(t, "ResponseOutputMessage", item, reflect.TypeFor[responses.ResponseOutputMessage](), "required")
			var parts []map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(item["content"], &parts))
			for _, p := range parts {
				checkFields(t, "ResponseOutputText", p, reflect.TypeFor[responses.ResponseOutputText](), "required")
			}
		case "function_call":
			checkFields(t, "ResponseFunctionToolCall", item, reflect.TypeFor[responses.ResponseFunctionToolCall](), "required")
		case "reasoning":
			checkFields(t, "ResponseReasoningItem", item, reflect.TypeFor[responses.ResponseReasoningItem](), "required")
		default:
			t.Errorf("output item of type %q", typ)
		}
	}
}

// checkFields checks that obj has each field of typ whose api tag is one of kinds, and
// the "type" and "object" discriminators typ has.
func checkFields(t *testing.T, name string, obj map[string]json.RawMessage, typ reflect.Type, kinds ...string) {
	t.Helper()
	for f := range typ.Fields() {
		key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if key == "" || key == "-" {
			continue
		}
		api := f.Tag.Get("api")
		if !contains(kinds, api) && key != "type" && key != "object" && key != "role" {
			continue
		}
		if _, ok := obj[key]; !ok {
			t.Errorf("%s: the %s field %q is missing", name, api, key)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestCheckRequiredCanFail(t *testing.T) {
	ft := &testing.T{}
	checkFields(ft, "ResponseUsage", map[string]json.RawMessage{"input_tokens": []byte("1")}, reflect.TypeFor[responses.ResponseUsage](), "required")
	assert.True(t, ft.Failed(), "a usage without output_tokens passes")
}

func weatherFunction(t *testing.T) responses.ToolUnionParam {
	var params map[string]any
	require.NoError(t, json.Unmarshal([]byte(weatherSchema), &params))
	return responses.ToolUnionParam{OfFunction: &responses.FunctionToolParam{Name: "get_weather", Parameters: params,
		Strict: oai.Bool(true), Description: oai.String("The weather forecast of a city.")}}
}

// TestResponsesTools: with tool_choice required, the model calls the tool with
// arguments valid under its schema, whole and streamed alike; the call's output sent
// back, by previous_response_id or as items, gets an answer from a prompt that holds
// the call and its output.
func TestResponsesTools(t *testing.T) {
	_, ts := newTestServer(t, tinyModel, serve.Config{})
	c, rec := client(ts)
	ctx := context.Background()
	schema := validator(t, weatherSchema)
	for n := 1; n <= 2; n++ {
		p := responses.ResponseNewParams{
			Model:             modelName,
			Input:             responses.ResponseNewParamsInputUnion{OfString: oai.String("What is the weather in Paris this week?")},
			Tools:             []responses.ToolUnionParam{weatherFunction(t)},
			ToolChoice:        responses.ResponseNewParamsToolChoiceUnion{OfToolChoiceMode: oai.Opt(responses.ToolChoiceOptionsRequired)},
			ParallelToolCalls: oai.Bool(false),
			Temperature:       oai.Float(1),
			MaxOutputTokens:   oai.Int(400),
		}
		if n == 2 { // a named function, as the second form of a forced call
			p.ToolChoice = responses.ResponseNewParamsToolChoiceUnion{OfFunctionTool: &responses.ToolChoiceFunctionParam{Name: "get_weather"}}
		}
		whole, err := c.Responses.New(ctx, p, seed(n))
		require.NoError(t, err)
		checkRequired(t, rec.last())
		require.Equal(t, responses.ResponseStatusCompleted, whole.Status, rec.last())
		assert.False(t, whole.JSON.IncompleteDetails.Valid(), "incomplete_details is null")
		var calls []responses.ResponseFunctionToolCall
		for _, item := range whole.Output {
			if item.Type == "function_call" {
				calls = append(calls, item.AsFunctionCall())
			}
		}
		require.Len(t, calls, 1, "parallel_tool_calls false: one call")
		call := calls[0]
		assert.Equal(t, "get_weather", call.Name)
		assert.True(t, strings.HasPrefix(call.CallID, "call_"), call.CallID)
		assert.True(t, strings.HasPrefix(call.ID, "fc_"), call.ID)
		assert.Equal(t, responses.ResponseFunctionToolCallStatusCompleted, call.Status)
		validate(t, schema, call.Arguments)
		if n == 2 {
			assert.Equal(t, "function", whole.ToolChoice.Type)
			assert.Equal(t, "get_weather", whole.ToolChoice.Name)
		} else {
			assert.Equal(t, "required", string(whole.ToolChoice.OfToolChoiceMode))
		}
		require.Len(t, whole.Tools, 1)
		assert.Equal(t, "get_weather", whole.Tools[0].Name)

		stream := c.Responses.NewStreaming(ctx, p, seed(n))
		for stream.Next() {
		}
		require.NoError(t, stream.Err())
		s := accumulate(t, rec.last())
		assert.Contains(t, s.types, "response.function_call_arguments.delta")
		assert.Equal(t, withoutIDs(t, whole), withoutIDs(t, s.final))

		// The output goes back after the stored response.
		output := responses.ResponseInputItemParamOfFunctionCallOutput(`{"forecast": "sunny", "high": 24}`)
		output.OfFunctionCallOutput.CallID = oai.String(call.CallID)
		follow := responses.ResponseNewParams{
			Model:              modelName,
			PreviousResponseID: oai.String(whole.ID),
			Input:              responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{output}},
			Tools:              []responses.ToolUnionParam{weatherFunction(t)},
			ToolChoice:         responses.ResponseNewParamsToolChoiceUnion{OfToolChoiceMode: oai.Opt(responses.ToolChoiceOptionsNone)},
			Temperature:        oai.Float(0),
			MaxOutputTokens:    oai.Int(8),
		}
		answer, err := c.Responses.New(ctx, follow)
		require.NoError(t, err)
		assert.NotEmpty(t, answer.OutputText())
		for _, item := range answer.Output {
			assert.NotEqual(t, "function_call", item.Type)
		}
		assert.Greater(t, answer.Usage.InputTokens, whole.Usage.InputTokens+10, "the prompt holds the call and its output")
		assert.Equal(t, whole.ID, answer.PreviousResponseID)

		// The same conversation sent as items, without the stored response, makes the
		// same prompt.
		items := responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage("What is the weather in Paris this week?", responses.EasyInputMessageRoleUser)}
		callParam := call.ToParam()
		items = append(items, responses.ResponseInputItemUnionParam{OfFunctionCall: &callParam}, output)
		follow.PreviousResponseID = oai.String("")
		follow.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: items}
		again, err := c.Responses.New(ctx, follow)
		require.NoError(t, err)
		assert.Equal(t, answer.Usage.InputTokens, again.Usage.InputTokens)
		assert.Equal(t, answer.OutputText(), again.OutputText())
	}
}

// TestResponsesJSONSchema: text.format json_schema makes the output valid under the
// schema.
func TestResponsesJSONSchema(t *testing.T) {
	_, ts := newTestServer(t, tinyModel, serve.Config{})
	c, rec := client(ts)
	var schemaMap map[string]any
	require.NoError(t, json.Unmarshal([]byte(weatherSchema), &schemaMap))
	schema := validator(t, weatherSchema)
	for n := 1; n <= 2; n++ {
		p := respParams("The weather, as JSON.", 200)
		p.Temperature = oai.Float(1)
		p.Text = responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigUnionParam{
			OfJSONSchema: &responses.ResponseFormatTextJSONSchemaConfigParam{Name: "weather", Schema: schemaMap, Strict: oai.Bool(true)}}}
		r, err := c.Responses.New(context.Background(), p, seed(n))
		require.NoError(t, err)
		require.Equal(t, responses.ResponseStatusCompleted, r.Status, rec.last())
		validate(t, schema, r.OutputText())
		assert.Equal(t, "json_schema", r.Text.Format.Type)
		assert.Equal(t, "weather", r.Text.Format.Name)
	}
	// json_object: a JSON object, of any shape. Its strings are unbounded, so the random
	// model at temperature 1 often writes one until max_output_tokens (bounding that is
	// a reasoning budget's job): every reply that completes must be an object, and some
	// of the seeds must complete.
	completed := 0
	for n := 1; n <= 8; n++ {
		p := respParams("Some JSON.", 400)
		p.Temperature = oai.Float(1)
		p.Text = responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigUnionParam{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}}
		r, err := c.Responses.New(context.Background(), p, seed(n))
		require.NoError(t, err)
		assert.Equal(t, "json_object", r.Text.Format.Type)
		if r.Status != responses.ResponseStatusCompleted {
			assert.Equal(t, "max_output_tokens", r.IncompleteDetails.Reason, rec.last())
			continue
		}
		completed++
		// Numbers as written (JSON allows 1e647, which a float64 does not hold).
		dec := json.NewDecoder(strings.NewReader(r.OutputText()))
		dec.UseNumber()
		var obj map[string]any
		assert.NoError(t, dec.Decode(&obj), r.OutputText())
		assert.False(t, dec.More(), "text after the object: %s", r.OutputText())
	}
	assert.Positive(t, completed, "no json_object reply of 8 seeds completed")
}

// TestResponsesPrevious: a follow-up by previous_response_id continues the stored
// conversation, its prompt's prefix served from the cache; the instructions are not
// inherited; an unknown id and a response not stored are refused as OpenAI refuses
// them.
func TestResponsesPrevious(t *testing.T) {
	_, ts := newTestServer(t, tinyModel, serve.Config{})
	c, _ := client(ts)
	ctx := context.Background()
	first, err := c.Responses.New(ctx, respParams("Tell me about the sea.", 10), seed(1))
	require.NoError(t, err)
	assert.Zero(t, first.Usage.InputTokensDetails.CachedTokens)

	next := respParams("And the mountains?", 10)
	next.PreviousResponseID = oai.String(first.ID)
	second, err := c.Responses.New(ctx, next, seed(1))
	require.NoError(t, err)
	u := second.Usage
	assert.Greater(t, u.InputTokens, first.Usage.InputTokens+first.Usage.OutputTokens/2, "the prompt holds the first turn")
	assert.GreaterOrEqual(t, u.InputTokensDetails.CachedTokens, first.Usage.InputTokens/2, "the prefix came from the cache")
	assert.Less(t, u.InputTokensDetails.CachedTokens, u.InputTokens)
	assert.Equal(t, first.ID, second.PreviousResponseID)

	// Without the previous response, the prompt is the new input alone.
	alone, err := c.Responses.New(ctx, respParams("And the mountains?", 10), seed(1))
	require.NoError(t, err)
	assert.Less(t, alone.Usage.InputTokens, u.InputTokens-first.Usage.OutputTokens/2)

	// A chain of three: the second's conversation includes the first's.
	third := respParams("And the sky?", 4)
	third.PreviousResponseID = oai.String(second.ID)
	r3, err := c.Responses.New(ctx, third)
	require.NoError(t, err)
	assert.Greater(t, r3.Usage.InputTokens, u.InputTokens)

	// The instructions are the request's own: a follow-up without them has a shorter
	// prompt than one that repeats them.
	noInstr := respParams("And the sky?", 4)
	noInstr.Instructions = oai.String("")
	noInstr.PreviousResponseID = oai.String(second.ID)
	r4, err := c.Responses.New(ctx, noInstr)
	require.NoError(t, err)
	assert.Less(t, r4.Usage.InputTokens, r3.Usage.InputTokens)

	// Unknown id: 400 previous_response_not_found naming the parameter.
	bad := respParams("Hi", 4)
	bad.PreviousResponseID = oai.String("resp_unknown")
	_, err = c.Responses.New(ctx, bad)
	checkAPIErr(t, err, http.StatusBadRequest, "previous_response_id", "previous_response_not_found")

	// store: false is not kept.
	unstored := respParams("Hi", 4)
	unstored.Store = oai.Bool(false)
	r5, err := c.Responses.New(ctx, unstored)
	require.NoError(t, err)
	assert.Equal(t, "false", r5.JSON.ExtraFields["store"].Raw())
	bad.PreviousResponseID = oai.String(r5.ID)
	_, err = c.Responses.New(ctx, bad)
	checkAPIErr(t, err, http.StatusBadRequest, "previous_response_id", "previous_response_not_found")
	_, err = c.Responses.Get(ctx, r5.ID, responses.ResponseGetParams{})
	checkAPIErr(t, err, http.StatusNotFound, "", "")
}

func checkAPIErr(t *testing.T, err error, status int, param, code string) {
	t.Helper()
	var apiErr *oai.Error
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, status, apiErr.StatusCode)
	assert.Equal(t, param, apiErr.Param)
	assert.Equal(t, code, apiErr.Code)
	assert.Equal(t, "invalid_request_error", apiErr.Type)
	assert.NotEmpty(t, apiErr.Message)
}

// TestResponsesIncomplete: a response cut at max_output_tokens is incomplete, whole and
// streamed, its last item too.
func TestResponsesIncomplete(t *testing.T) {
	_, ts := newTestServer(t, tinyModel, serve.Config{})
	c, rec := client(ts)
	ctx := context.Background()
	p := respParams("Write a long story.", 3)
	p.Temperature = oai.Float(1)
	for _, stream := range []bool{false, true} {
		var r *responses.Response
		if stream {
			st := c.Responses.NewStreaming(ctx, p, seed(3))
			for st.Next() {
			}
			require.NoError(t, st.Err())
			s := accumulate(t, rec.last())
			assert.Equal(t, "response.incomplete", s.types[len(s.types)-1])
			r = s.final
		} else {
			var err error
			r, err = c.Responses.New(ctx, p, seed(3))
			require.NoError(t, err)
		}
		require.Equal(t, responses.ResponseStatusIncomplete, r.Status, "stream %v", stream)
		assert.Equal(t, "max_output_tokens", r.IncompleteDetails.Reason)
		assert.Equal(t, int64(3), r.Usage.OutputTokens)
		assert.Equal(t, int64(3), r.MaxOutputTokens)
		last := r.Output[len(r.Output)-1]
		var item struct {
			Status string `json:"status"`
		}
		require.NoError(t, json.Unmarshal([]byte(last.RawJSON()), &item))
		assert.Equal(t, "incomplete", item.Status)
	}
}

// TestResponsesReasoning: the thinking comes as a reasoning item before the message,
// counted in reasoning_tokens; reasoning.effort "none" switches it off.
func TestResponsesReasoning(t *testing.T) {
	_, ts := newTestServer(t, thinkModel, serve.Config{})
	c, rec := client(ts)
	ctx := context.Background()
	p := respParams("Why is the sky blue?", 24)
	on, err := c.Responses.New(ctx, p, seed(7))
	require.NoError(t, err)
	checkRequired(t, rec.last())
	require.NotEmpty(t, on.Output)
	require.Equal(t, "reasoning", on.Output[0].Type, rec.last())
	rs := on.Output[0].AsReasoning()
	assert.True(t, strings.HasPrefix(rs.ID, "rs_"), rs.ID)
	require.Len(t, rs.Content, 1)
	assert.Equal(t, "reasoning_text", string(rs.Content[0].Type))
	assert.NotEmpty(t, rs.Content[0].Text)
	assert.True(t, rs.JSON.Summary.Valid(), "summary: [] is sent")
	assert.Positive(t, on.Usage.OutputTokensDetails.ReasoningTokens)

	st := c.Responses.NewStreaming(ctx, p, seed(7))
	for st.Next() {
	}
	require.NoError(t, st.Err())
	s := accumulate(t, rec.last())
	assert.Contains(t, s.types, "response.reasoning_text.delta")
	assert.Equal(t, withoutIDs(t, on), withoutIDs(t, s.final))

	p.Reasoning = shared.ReasoningParam{Effort: shared.ReasoningEffortNone}
	off, err := c.Responses.New(ctx, p, seed(7))
	require.NoError(t, err)
	for _, item := range off.Output {
		assert.NotEqual(t, "reasoning", item.Type)
	}
	assert.Zero(t, off.Usage.OutputTokensDetails.ReasoningTokens)
	assert.Equal(t, "none", string(off.Reasoning.Effort))
}

// TestResponsesErrors: bad requests get a 400 naming the parameter at fault.
func TestResponsesErrors(t *testing.T) {
	_, ts := newTestServer(t, tinyModel, serve.Config{})
	for _, tc := range []struct{ body, param string }{
		{`{"model": "tiny"}`, "input"},
		{`{"input": []}`, "input"},
		{`{"input": 3}`, "input"},
		{`{"input": [{"role": "robot", "content": "x"}]}`, "input[0].role"},
		{`{"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]}`, "input[0].content[0].type"},
		{`{"input": [{"type": "function_call", "name": "f", "arguments": "{}"}]}`, "input[0].call_id"},
		{`{"input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": "[1]"}]}`, "input[0].arguments"},
		{`{"input": [{"type": "function_call_output", "output": "x"}]}`, "input[0].call_id"},
		{`{"input": [{"type": "item_reference", "id": "x"}]}`, "input[0].type"},
		{`{"input": "x", "tools": [{"type": "web_search"}]}`, "tools[0].type"},
		{`{"input": "x", "tools": [{"type": "function", "name": "a b"}]}`, "tools[0].name"},
		{`{"input": "x", "tools": [{"type": "function", "name": "f", "parameters": {"type": "object", "properties": {"a": {"type": "frobnicate"}}}}], "tool_choice": "required"}`, "tools[0].parameters"},
		{`{"input": "x", "tool_choice": "sometimes"}`, "tool_choice"},
		{`{"input": "x", "tools": [{"type": "function", "name": "f"}], "tool_choice": {"type": "function", "name": "g"}}`, "tool_choice.name"},
		{`{"input": "x", "text": {"format": {"type": "xml"}}}`, "text.format.type"},
		{`{"input": "x", "text": {"format": {"type": "json_schema", "name": "n"}}}`, "text.format.schema"},
		{`{"input": "x", "max_output_tokens": 0}`, "max_output_tokens"},
		{`{"input": "x", "temperature": 3}`, "temperature"},
		{`{"input": "x", "top_p": "a"}`, "top_p"},
		{`{"input": "x", "reasoning": {"effort": "extreme"}}`, "reasoning.effort"},
		{`{"input": "x", "background": true}`, "background"},
		{`{"input": "x", "previous_response_id": "resp_x"}`, "previous_response_id"},
	} {
		status, _, body := post(t, ts.URL+"/v1/responses", tc.body)
		var e struct {
			Error struct {
				Message string  `json:"message"`
				Type    string  `json:"type"`
				Param   *string `json:"param"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal(body, &e), "%s", body)
		assert.Equal(t, http.StatusBadRequest, status, "%s: %s", tc.body, body)
		if assert.NotNil(t, e.Error.Param, "%s: %s", tc.body, body) {
			assert.Equal(t, tc.param, *e.Error.Param, "%s: %s", tc.body, body)
		}
		if tc.param != "previous_response_id" { // OpenAI's message names the id
			assert.Contains(t, e.Error.Message, tc.param, tc.body)
		}
	}
	// An unknown field is ignored, as the chat endpoint ignores it.
	status, _, body := post(t, ts.URL+"/v1/responses", `{"input": "x", "max_output_tokens": 2, "frobnicate": 1}`)
	assert.Equal(t, http.StatusOK, status, "%s", body)
	// Any model name is served, as on the chat endpoint; the response names the model.
	status, _, body = post(t, ts.URL+"/v1/responses", `{"input": "x", "max_output_tokens": 2, "model": "gpt-5"}`)
	require.Equal(t, http.StatusOK, status, "%s", body)
	var r struct{ Model string }
	require.NoError(t, json.Unmarshal(body, &r))
	assert.NotEqual(t, "gpt-5", r.Model, "the served name, not the client's")
}

// TestResponseStore: the store drops the least recently used response past its count
// or its bytes, and keeps none larger than itself.
func TestResponseStore(t *testing.T) {
	conv := []bonsai.Message{{Role: bonsai.RoleUser, Content: "hi"}}
	st := newResponseStore(2, 1<<20)
	st.put("a", []byte("{}"), conv)
	st.put("b", []byte("{}"), conv)
	_, ok := st.response("a") // a is now the most recent
	require.True(t, ok)
	st.put("c", []byte("{}"), conv)
	_, ok = st.response("b")
	assert.False(t, ok, "b was the least recently used")
	for _, id := range []string{"a", "c"} {
		_, ok = st.response(id)
		assert.True(t, ok, id)
	}

	big := make([]byte, 600)
	st = newResponseStore(100, 1000)
	st.put("a", big, conv)
	st.put("b", big, conv)
	_, okA := st.response("a")
	_, okB := st.response("b")
	assert.False(t, okA, "over the bytes: a dropped")
	assert.True(t, okB)
	assert.LessOrEqual(t, st.bytes, int64(1000))
	st.put("huge", make([]byte, 2000), conv)
	_, ok = st.response("huge")
	assert.False(t, ok)
	_, ok = st.response("b")
	assert.True(t, ok, "a response too large to keep does not empty the store")

	got, ok := st.conversation("b")
	require.True(t, ok)
	got[0].Content = "changed"
	again, _ := st.conversation("b")
	assert.Equal(t, "hi", again[0].Content, "a conversation handed out is a copy")
	assert.True(t, st.remove("b"))
	assert.False(t, st.remove("b"))
	assert.Zero(t, st.bytes)
}

func TestResponsesParam(t *testing.T) {
	for in, want := range map[string]string{
		"max_tokens": "max_output_tokens", "response_format.json_schema.schema": "text.format.schema",
		"tools[3].function.parameters": "tools[3].parameters", "tool_choice.function.name": "tool_choice.name", "input": "input",
	} {
		assert.Equal(t, want, responsesParam(in), in)
	}
}

// TestResponsesDrain: responses the server ends as it drains (StopAll) are incomplete,
// whole and streamed (response.incomplete, read by openai-go), with what they generated
// and its usage; a request after that gets 503 with Retry-After.
func TestResponsesDrain(t *testing.T) {
	cfg := serve.Config{Parallel: 2}
	var tokens sync.Map // of each generation (its context), *atomic.Int32
	serve.SetTokenHook(&cfg, func(ctx context.Context) {
		n, _ := tokens.LoadOrStore(ctx, new(atomic.Int32))
		n.(*atomic.Int32).Add(1)
		time.Sleep(2 * time.Millisecond)
	})
	s, ts := newTestServer(t, tinyModel, cfg)
	c, _ := client(ts)
	p := respParams("Hello there", 3000)
	got := make(chan *responses.Response, 2)
	go func() {
		st := c.Responses.NewStreaming(context.Background(), p)
		var last *responses.Response
		for st.Next() {
			if ev := st.Current(); ev.Type == "response.incomplete" || ev.Type == "response.completed" {
				r := ev.Response
				last = &r
			}
		}
		assert.NoError(t, st.Err())
		got <- last
	}()
	go func() {
		r, err := c.Responses.New(context.Background(), p)
		assert.NoError(t, err)
		got <- r
	}()
	deadline := time.Now().Add(10 * time.Second)
	for started := 0; started < 2; {
		require.True(t, time.Now().Before(deadline), "the generations did not start")
		time.Sleep(time.Millisecond)
		started = 0
		tokens.Range(func(_, n any) bool {
			if n.(*atomic.Int32).Load() >= 5 {
				started++
			}
			return true
		})
	}
	s.StopAll()
	for range 2 {
		r := <-got
		require.NotNil(t, r)
		assert.Equal(t, responses.ResponseStatusIncomplete, r.Status, r.RawJSON())
		assert.Equal(t, "max_output_tokens", r.IncompleteDetails.Reason)
		assert.GreaterOrEqual(t, r.Usage.OutputTokens, int64(5))
		assert.Less(t, r.Usage.TotalTokens, int64(tinyModel.ContextSize()), "cut by the drain, not by the context")
		require.NotEmpty(t, r.Output)
	}
	code, h, b := post(t, ts.URL+"/v1/responses", `{"input": "Hi", "max_output_tokens": 3}`)
	assert.Equal(t, http.StatusServiceUnavailable, code, "%s", b)
	assert.NotEmpty(t, h.Get("Retry-After"))
}

// TestResponsesStreamError: a stream the server cancels (CancelAll) ends with an error
// event in OpenAI's shape, after the events sent so far.
func TestResponsesStreamError(t *testing.T) {
	cfg := serve.Config{}
	var n atomic.Int32
	serve.SetTokenHook(&cfg, func(context.Context) {
		n.Add(1)
		time.Sleep(2 * time.Millisecond)
	})
	s, ts := newTestServer(t, tinyModel, cfg)
	c, rec := client(ts)
	done := make(chan []string)
	go func() {
		st := c.Responses.NewStreaming(context.Background(), respParams("Hello there", 3000))
		var types []string
		for st.Next() {
			types = append(types, st.Current().Type)
		}
		assert.NoError(t, st.Err())
		done <- types
	}()
	deadline := time.Now().Add(10 * time.Second)
	for n.Load() < 5 {
		require.True(t, time.Now().Before(deadline), "the generation did not start")
		time.Sleep(time.Millisecond)
	}
	s.CancelAll()
	types := <-done
	require.NotEmpty(t, types)
	assert.Equal(t, "error", types[len(types)-1])
	events := readNamedEvents(t, rec.last())
	last := events[len(events)-1]
	checkEvent(t, last.data, last.name)
	var e responses.ResponseErrorEvent
	require.NoError(t, json.Unmarshal([]byte(last.data), &e))
	assert.Equal(t, "shutting_down", e.Code)
	assert.Equal(t, int64(len(events)-1), e.SequenceNumber)
	assert.NotEmpty(t, e.Message)
}

// TestResponsesStoreBounds: a server configured to keep 2 responses keeps the 2 most
// recently used, through the API: GET of the oldest answers 404 saying the store's
// bounds, and previous_response_id naming it is refused; with the store off
// (StoredResponses negative) nothing is kept, and each response says "store": false.
func TestResponsesStoreBounds(t *testing.T) {
	ctx := context.Background()
	_, ts := newTestServerAPI(t, tinyModel, serve.Config{}, Config{StoredResponses: 2})
	c, _ := client(ts)
	var ids []string
	for _, prompt := range []string{"One", "Two", "Three"} {
		r, err := c.Responses.New(ctx, respParams(prompt, 2))
		require.NoError(t, err)
		assert.Equal(t, "true", r.JSON.ExtraFields["store"].Raw())
		ids = append(ids, r.ID)
	}
	_, err := c.Responses.Get(ctx, ids[0], responses.ResponseGetParams{})
	checkAPIErr(t, err, http.StatusNotFound, "", "")
	var apiErr *oai.Error
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, "Response with id '"+ids[0]+"' not found: it was never stored, was deleted, or was dropped "+
		"(this server keeps the 2 most recently used responses, up to 67108864 bytes).", apiErr.Message)
	for _, id := range ids[1:] {
		got, err := c.Responses.Get(ctx, id, responses.ResponseGetParams{})
		require.NoError(t, err, id)
		assert.Equal(t, id, got.ID)
	}
	next := respParams("Four", 2)
	next.PreviousResponseID = oai.String(ids[0])
	_, err = c.Responses.New(ctx, next)
	checkAPIErr(t, err, http.StatusBadRequest, "previous_response_id", "previous_response_not_found")

	_, ts = newTestServerAPI(t, tinyModel, serve.Config{}, Config{StoredResponses: -1})
	c, _ = client(ts)
	asked := respParams("One", 2)
	asked.Store = oai.Bool(true)
	r, err := c.Responses.New(ctx, asked)
	require.NoError(t, err)
	assert.Equal(t, "false", r.JSON.ExtraFields["store"].Raw(), "not stored, and says so")
	_, err = c.Responses.Get(ctx, r.ID, responses.ResponseGetParams{})
	checkAPIErr(t, err, http.StatusNotFound, "", "")
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, "Response with id '"+r.ID+"' not found: this server keeps no responses (its store is off); "+
		"send the whole conversation as input items instead.", apiErr.Message)
	next.PreviousResponseID = oai.String(r.ID)
	_, err = c.Responses.New(ctx, next)
	checkAPIErr(t, err, http.StatusBadRequest, "previous_response_id", "previous_response_not_found")
	require.ErrorAs(t, err, &apiErr)
	assert.Contains(t, apiErr.Message, "this server keeps no responses")
}
