// Package toolcall reads the tool calls a Qwen model writes into its answer.
//
// Qwen3.5 writes a call as XML-like markup, one parameter per block, the value on its
// own lines:
//
//	<tool_call>
//	<function=get_weather>
//	<parameter=city>
//	Paris
//	</parameter>
//	</function>
//	</tool_call>
//
// Qwen3 wrote a JSON object inside the same tags: {"name": ..., "arguments": {...}}.
// Both are accepted. A parameter's value becomes JSON by the function's schema, as
// llama.cpp's parser for this format does: a parameter the schema types as a string
// stays the text as written; any other value is parsed as JSON (numbers, booleans,
// null, objects, arrays) and, when it does not parse, kept as a string.
//
// A Parser reads a stream of text and reports Events: answer text outside the blocks,
// the start of each call, pieces of its JSON arguments as each parameter completes,
// the completed call, and blocks that could not be parsed (their text is reported as
// answer text too, so nothing the model wrote is lost).
package toolcall

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Call is a parsed tool call.
type Call struct {
	// Name is the called function's name.
	Name string
	// Arguments is a JSON object.
	Arguments json.RawMessage
}

// Markup of a tool-call block.
const (
	Open  = "<tool_call>"
	Close = "</tool_call>"
)

// ErrMalformed is wrapped by the error of a block that could not be parsed.
var ErrMalformed = errors.New("toolcall: malformed tool call")

// EventKind tells Events apart.
type EventKind int

const (
	// Text is answer text outside tool-call blocks.
	Text EventKind = iota
	// Start opens a call: Index and Name are set.
	Start
	// Arguments is a piece of the call's JSON arguments text.
	Arguments
	// End completes a call: Call is set.
	End
	// Malformed reports a block that could not be parsed: Raw and Err are set, and a
	// Text event with Raw follows.
	Malformed
)

// Event is one thing a Parser read.
type Event struct {
	Kind  EventKind // what the event is; it says which other fields are set
	Index int       // the call's index (Start, Arguments, End)
	Text  string    // Text: answer text; Arguments: a piece; Start: the name
	Call  *Call     // End
	Raw   string    // Malformed: the block as written
	Err   error     // Malformed
}

// Parser reads tool calls from a stream of text. The zero value is not usable; use
// NewParser.
type Parser struct {
	schemas map[string]json.RawMessage
	known   bool // schemas lists the known functions: other names are malformed

	inBlock bool
	held    string // outside: a suffix that may begin Open; inside: the block so far
	calls   int

	// Incremental state inside an XML block, for Start and Arguments events.
	started  bool   // Start was reported for the current block
	argsOut  string // the arguments text reported so far for the current block
	scanned  int    // bytes of held already scanned for parameter ends
	nparams  int
	paramBuf []param
}

type param struct{ name, value string }

// NewParser returns a parser for calls of the functions whose parameter schemas are
// given by name (a nil schema: any parameters). With a nil map any function name is
// accepted and values are converted without a schema.
func NewParser(schemas map[string]json.RawMessage) *Parser {
	return &Parser{schemas: schemas, known: schemas != nil}
}

// Feed reads the next text and returns what it completes.
func (p *Parser) Feed(s string) []Event {
	var ev []Event
	p.held += s
	for {
		if !p.inBlock {
			i := strings.Index(p.held, Open)
			if i < 0 {
				keep := overlap(p.held, Open)
				if out := p.held[:len(p.held)-keep]; out != "" {
					ev = append(ev, Event{Kind: Text, Text: out})
				}
				p.held = p.held[len(p.held)-keep:]
				return ev
			}
			if i > 0 {
				ev = append(ev, Event{Kind: Text, Text: p.held[:i]})
			}
			p.held = p.held[i:]
			p.inBlock, p.started, p.argsOut, p.scanned, p.nparams, p.paramBuf = true, false, "", len(Open), 0, p.paramBuf[:0]
		}
		j := strings.Index(p.held, Close)
		if j < 0 {
			ev = p.progress(ev)
			return ev
		}
		block := p.held[:j+len(Close)]
		p.held = p.held[j+len(Close):]
		p.inBlock = false
		ev = p.complete(ev, block)
	}
}

// Flush ends the stream: an unfinished block is malformed.
func (p *Parser) Flush() []Event {
	var ev []Event
	if p.inBlock {
		raw := p.held
		p.held, p.inBlock = "", false
		ev = p.malformed(ev, raw, fmt.Errorf("%w: %s without %s", ErrMalformed, Open, Close))
	} else if p.held != "" {
		ev = append(ev, Event{Kind: Text, Text: p.held})
		p.held = ""
	}
	return ev
}

// InBlock reports whether the parser is inside a tool-call block.
func (p *Parser) InBlock() bool { return p.inBlock }

// Calls is the number of calls completed so far.
func (p *Parser) Calls() int { return p.calls }

func (p *Parser) malformed(ev []Event, raw string, err error) []Event {
	return append(ev, Event{Kind: Malformed, Index: p.calls, Raw: raw, Err: err}, Event{Kind: Text, Text: raw})
}

// progress reports the start of an XML call and its parameters as they complete.
func (p *Parser) progress(ev []Event) []Event {
	body := p.held[len(Open):]
	if !p.started {
		b := strings.TrimLeft(body, " \t\r\n")
		if !strings.HasPrefix(b, "<function=") {
			return ev
		}
		k := strings.IndexByte(b, '>')
		if k < 0 {
			return ev
		}
		name := b[len("<function="):k]
		if !p.validName(name) {
			return ev
		}
		p.started = true
		ev = append(ev, Event{Kind: Start, Index: p.calls, Text: name})
		p.scanned = len(p.held) - len(b) + k + 1
	}
	name := p.curName()
	for {
		rest := p.held[p.scanned:]
		k := strings.Index(rest, "</parameter>")
		if k < 0 {
			return ev
		}
		seg := rest[:k]
		p.scanned += k + len("</parameter>")
		pn, val, ok := splitParam(seg)
		if !ok {
			return ev // complete reports it as malformed
		}
		piece, err := p.paramPiece(name, pn, val, p.nparams == 0)
		if err != nil {
			return ev
		}
		p.nparams++
		p.argsOut += piece
		ev = append(ev, Event{Kind: Arguments, Index: p.calls, Text: piece})
	}
}

func (p *Parser) curName() string {
	b := strings.TrimLeft(p.held[len(Open):], " \t\r\n")
	k := strings.IndexByte(b, '>')
	return b[len("<function="):k]
}

func (p *Parser) validName(name string) bool {
	if name == "" || strings.ContainsAny(name, "<>\n") {
		return false
	}
	if p.known {
		_, ok := p.schemas[name]
		return ok
	}
	return true
}

// complete parses a whole block and reports the call, or the block as malformed.
func (p *Parser) complete(ev []Event, block string) []Event {
	call, err := p.parseBlock(block)
	if err != nil {
		return p.malformed(ev, block, err)
	}
	if !p.started {
		ev = append(ev, Event{Kind: Start, Index: p.calls, Text: call.Name})
	}
	// The pieces reported so far are a prefix of the final arguments: report the rest.
	if rest, ok := strings.CutPrefix(string(call.Arguments), p.argsOut); ok && rest != "" {
		ev = append(ev, Event{Kind: Arguments, Index: p.calls, Text: rest})
	} else if !ok {
		// Cannot happen: the arguments are built from the same pieces.
		return p.malformed(ev, block, fmt.Errorf("%w: arguments changed while streaming", ErrMalformed))
	}
	ev = append(ev, Event{Kind: End, Index: p.calls, Call: &call})
	p.calls++
	return ev
}

// Parse reads a whole answer: its text outside the blocks, the calls and the malformed
// blocks.
func Parse(text string, schemas map[string]json.RawMessage) (content string, calls []Call, malformed []Event) {
	p := NewParser(schemas)
	var b strings.Builder
	for _, e := range append(p.Feed(text), p.Flush()...) {
		switch e.Kind {
		case Text:
			b.WriteString(e.Text)
		case End:
			calls = append(calls, *e.Call)
		case Malformed:
			malformed = append(malformed, e)
		}
	}
	return b.String(), calls, malformed
}

// parseBlock parses "<tool_call>…</tool_call>".
func (p *Parser) parseBlock(block string) (Call, error) {
	body := strings.TrimSpace(block[len(Open) : len(block)-len(Close)])
	switch {
	case strings.HasPrefix(body, "<function="):
		return p.parseXML(body)
	case strings.HasPrefix(body, "{"):
		return p.parseJSON(body)
	}
	return Call{}, fmt.Errorf("%w: the block holds neither <function=…> nor a JSON object", ErrMalformed)
}

func (p *Parser) parseXML(body string) (Call, error) {
	k := strings.IndexByte(body, '>')
	if k < 0 {
		return Call{}, fmt.Errorf("%w: <function= is not closed by >", ErrMalformed)
	}
	name := body[len("<function="):k]
	if err := p.checkName(name); err != nil {
		return Call{}, err
	}
	rest := strings.TrimSpace(body[k+1:])
	inner, ok := strings.CutSuffix(rest, "</function>")
	if !ok {
		return Call{}, fmt.Errorf("%w: function %q: no </function> before %s", ErrMalformed, name, Close)
	}
	var args strings.Builder
	n := 0
	seen := map[string]bool{}
	for {
		inner = strings.TrimLeft(inner, " \t\r\n")
		if inner == "" {
			break
		}
		e := strings.Index(inner, "</parameter>")
		if e < 0 {
			return Call{}, fmt.Errorf("%w: function %q: a parameter without </parameter>", ErrMalformed, name)
		}
		pn, val, ok := splitParam(inner[:e])
		if !ok {
			return Call{}, fmt.Errorf("%w: function %q: expected <parameter=NAME>, found %q", ErrMalformed, name, clip(inner[:e]))
		}
		if seen[pn] {
			return Call{}, fmt.Errorf("%w: function %q: parameter %q given twice", ErrMalformed, name, pn)
		}
		seen[pn] = true
		piece, err := p.paramPiece(name, pn, val, n == 0)
		if err != nil {
			return Call{}, err
		}
		args.WriteString(piece)
		n++
		inner = inner[e+len("</parameter>"):]
	}
	if n == 0 {
		args.WriteString("{")
	}
	args.WriteString("}")
	return Call{Name: name, Arguments: json.RawMessage(args.String())}, nil
}

func (p *Parser) checkName(name string) error {
	if name == "" || strings.ContainsAny(name, "<>\n") {
		return fmt.Errorf("%w: bad function name %q", ErrMalformed, clip(name))
	}
	if p.known {
		if _, ok := p.schemas[name]; !ok {
			return fmt.Errorf("%w: unknown function %q", ErrMalformed, name)
		}
	}
	return nil
}

// splitParam splits "<parameter=NAME>VALUE" (VALUE up to </parameter>).
func splitParam(seg string) (name, value string, ok bool) {
	seg = strings.TrimLeft(seg, " \t\r\n")
	if !strings.HasPrefix(seg, "<parameter=") {
		return "", "", false
	}
	k := strings.IndexByte(seg, '>')
	if k < 0 {
		return "", "", false
	}
	name = seg[len("<parameter="):k]
	if name == "" || strings.ContainsAny(name, "<\n") {
		return "", "", false
	}
	value = seg[k+1:]
	// The format puts the value on its own lines: one newline after the opening tag
	// and one before the closing tag belong to the markup.
	value = strings.TrimPrefix(value, "\n")
	value = strings.TrimSuffix(value, "\n")
	return name, value, true
}

// paramPiece returns the JSON text of one parameter as it joins the arguments object:
// `{"name":value` for the first, `,"name":value` after.
func (p *Parser) paramPiece(fn, name, value string, first bool) (string, error) {
	v, err := p.convert(fn, name, value)
	if err != nil {
		return "", err
	}
	key, _ := json.Marshal(name)
	sep := ","
	if first {
		sep = "{"
	}
	return sep + string(key) + ":" + string(v), nil
}

// convert turns a parameter's text into JSON by its schema.
func (p *Parser) convert(fn, name, value string) (json.RawMessage, error) {
	types := paramTypes(p.schemas[fn], name)
	if types["string"] && len(types) == 1 {
		return marshalString(value), nil
	}
	t := strings.TrimSpace(value)
	if t != "" && json.Valid([]byte(t)) {
		var buf bytes.Buffer
		if err := json.Compact(&buf, []byte(t)); err == nil {
			if types == nil || types[jsonType(buf.Bytes())] || (types["number"] && jsonType(buf.Bytes()) == "integer") {
				return buf.Bytes(), nil
			}
		}
	}
	return marshalString(value), nil
}

func marshalString(s string) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// jsonType names the JSON type of a compact, valid JSON value.
func jsonType(v []byte) string {
	switch v[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	if bytes.ContainsAny(v, ".eE") {
		return "number"
	}
	return "integer"
}

// paramTypes returns the JSON types a function schema allows for a parameter, or nil
// when it does not say.
func paramTypes(schema json.RawMessage, name string) map[string]bool {
	if len(schema) == 0 {
		return nil
	}
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return nil
	}
	prop, ok := s.Properties[name]
	if !ok {
		return nil
	}
	types := map[string]bool{}
	collectTypes(prop, types, 0)
	if len(types) == 0 {
		return nil
	}
	return types
}

func collectTypes(schema json.RawMessage, types map[string]bool, depth int) {
	if depth > 8 {
		return
	}
	var s struct {
		Type  json.RawMessage   `json:"type"`
		AnyOf []json.RawMessage `json:"anyOf"`
		OneOf []json.RawMessage `json:"oneOf"`
		Enum  []json.RawMessage `json:"enum"`
		Const json.RawMessage   `json:"const"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return
	}
	var one string
	var many []string
	if json.Unmarshal(s.Type, &one) == nil {
		many = []string{one}
	} else {
		_ = json.Unmarshal(s.Type, &many)
	}
	for _, t := range many {
		types[t] = true
		if t == "integer" {
			types["number"] = true
		}
	}
	for _, e := range append(s.Enum, s.Const) {
		if len(e) > 0 {
			var buf bytes.Buffer
			if json.Compact(&buf, e) == nil {
				types[jsonType(buf.Bytes())] = true
			}
		}
	}
	for _, sub := range append(s.AnyOf, s.OneOf...) {
		collectTypes(sub, types, depth+1)
	}
}

// parseJSON parses Qwen3's {"name": ..., "arguments": {...}}.
func (p *Parser) parseJSON(body string) (Call, error) {
	var v struct {
		Name      *string         `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	dec := json.NewDecoder(strings.NewReader(body))
	if err := dec.Decode(&v); err != nil {
		return Call{}, fmt.Errorf("%w: JSON: %v", ErrMalformed, err)
	}
	if dec.More() {
		return Call{}, fmt.Errorf("%w: text after the JSON object", ErrMalformed)
	}
	if v.Name == nil {
		return Call{}, fmt.Errorf("%w: JSON without \"name\"", ErrMalformed)
	}
	if err := p.checkName(*v.Name); err != nil {
		return Call{}, err
	}
	args := bytes.TrimSpace(v.Arguments)
	if len(args) > 0 && args[0] == '"' { // some models write the arguments as a JSON string
		var s string
		if json.Unmarshal(args, &s) == nil {
			args = []byte(strings.TrimSpace(s))
		}
	}
	if len(args) == 0 || string(args) == "null" {
		args = []byte("{}")
	}
	if args[0] != '{' || !json.Valid(args) {
		return Call{}, fmt.Errorf("%w: function %q: arguments are not a JSON object", ErrMalformed, *v.Name)
	}
	var buf bytes.Buffer
	_ = json.Compact(&buf, args)
	return Call{Name: *v.Name, Arguments: buf.Bytes()}, nil
}

// overlap returns the length of the longest suffix of s that is a proper prefix of tag.
func overlap(s, tag string) int {
	for n := min(len(s), len(tag)-1); n > 0; n-- {
		if strings.HasSuffix(s, tag[:n]) {
			return n
		}
	}
	return 0
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
