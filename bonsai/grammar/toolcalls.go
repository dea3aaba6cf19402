package grammar

import (
	"encoding/json"
	"strconv"
)

// Function is a tool the grammar of ToolCalls lets the model call.
type Function struct {
	// Name is the function's name, which the call must write exactly.
	Name string
	// Parameters is the JSON Schema of the arguments (empty: any parameters).
	Parameters []byte
}

// ToolCalls compiles the grammar of an answer made of tool calls in Qwen3.5's markup,
// one call, or several separated by a newline when parallel:
//
//	<tool_call>
//	<function=NAME>
//	<parameter=P>
//	VALUE
//	</parameter>
//	</function>
//	</tool_call>
//
// The parameters of each function are those of its schema, in its order, the required
// ones present. A parameter whose schema is a plain string takes the text as written
// (anything without "</parameter>"; an enum or const its values; minLength and
// maxLength counted in characters of text without "<"; a pattern or format matched by
// text without "<"); any other value is JSON by its schema, as package toolcall reads
// it back.
func ToolCalls(fns []Function, parallel bool) (*Grammar, error) {
	if len(fns) == 0 {
		return nil, schemaErr("tools", "", "no functions")
	}
	c := newSchemaCompiler(nil, SchemaOptions{})
	b := c.b
	call := b.newRule("call")
	for i, f := range fns {
		fn, err := c.function(f, "/tools/"+strconv.Itoa(i))
		if err != nil {
			return nil, err
		}
		b.addAlt(call, append(b.lit("<tool_call>\n<function="+f.Name+">\n"), append([]elem{ref(fn)}, b.lit("</function>\n</tool_call>")...)...)...)
	}
	var calls int32
	if parallel {
		calls = b.seqRule("calls", ref(call), ref(b.star("more-calls", append(b.lit("\n"), ref(call))...)))
	} else {
		calls = call
	}
	g, err := b.build(b.seqRule("root", ref(c.lead()), ref(calls)))
	if err != nil {
		return nil, schemaErr("tools", "", "%v", err)
	}
	return g, nil
}

// function is the rule of a function's parameter blocks.
func (c *schemaCompiler) function(f Function, path string) (int32, error) {
	b := c.b
	if f.Name == "" {
		return 0, schemaErr("name", path, "a function needs a name")
	}
	for i := range len(f.Name) {
		if ch := f.Name[i]; ch == '<' || ch == '>' || ch == '\n' {
			return 0, schemaErr("name", path, "%q cannot be written in the call markup", f.Name)
		}
	}
	if len(f.Parameters) == 0 {
		return c.anyParams(), nil
	}
	doc, err := parseJV(f.Parameters)
	if err != nil {
		return 0, schemaErr("parameters", path, "not valid JSON: %v", err)
	}
	c.doc = doc
	c.refs = map[string]int32{}
	if doc.kind == 'o' {
		// A keyword the parameters' grammar would ignore changes what is valid.
		for _, k := range doc.keys {
			if !known[k] && !annotations[k] {
				return 0, schemaErr(k, pathJoin("", k), "keyword not supported")
			}
		}
	}
	props := doc.get("properties")
	if doc.kind != 'o' || (props == nil && doc.get("additionalProperties") == nil) {
		if doc.kind == 'o' && props == nil {
			return c.anyParams(), nil
		}
		return 0, schemaErr("parameters", path, "must be an object schema")
	}
	if props.kind != 'o' {
		return 0, schemaErr("properties", path+"/properties", "must be an object")
	}
	required := map[string]bool{}
	if req := doc.get("required"); req != nil && req.kind == 'a' {
		for _, x := range req.arr {
			if x.kind == 's' {
				required[x.str] = true
			}
		}
	}
	n := len(props.keys)
	blocks := make([]int32, n)
	for i, k := range props.keys {
		for j := range len(k) {
			if ch := k[j]; ch == '<' || ch == '>' || ch == '\n' {
				return 0, schemaErr("properties", path+"/properties", "parameter name %q cannot be written in the call markup", k)
			}
		}
		v, err := c.paramValue(props.vals[i], pathJoin("", "properties", k), 0)
		if err != nil {
			return 0, err
		}
		blocks[i] = b.seqRule("param-"+k, append(b.lit("<parameter="+k+">\n"), append([]elem{ref(v)}, b.lit("\n</parameter>\n")...)...)...)
	}
	// seq[i]: the blocks from parameter i on.
	next := b.newRule("params-end")
	b.addAlt(next)
	for i := n - 1; i >= 0; i-- {
		r := b.newRule("params")
		b.addAlt(r, ref(blocks[i]), ref(next))
		if !required[props.keys[i]] {
			b.addAlt(r, ref(next))
		}
		next = r
	}
	return next, nil
}

// paramValue is the rule of one parameter's value.
func (c *schemaCompiler) paramValue(s *jv, path string, depth int) (int32, error) {
	if s.kind == 'o' {
		t := s.get("type")
		if t != nil && t.kind == 's' && t.str == "string" && s.get("enum") == nil && s.get("const") == nil {
			for _, k := range s.keys {
				if !known[k] && !annotations[k] {
					return 0, schemaErr(k, pathJoin(path, k), "keyword not supported")
				}
			}
			return c.stringSchema(s, path, encRaw)
		}
		// The parser reads a parameter whose schema allows only strings as raw text, and
		// an enum of strings without "type" allows only strings: write it raw too.
		if e := s.get("enum"); e != nil && ((t != nil && t.kind == 's' && t.str == "string") || (t == nil && allStrings(e))) {
			r := c.b.newRule("raw-enum")
			if e.kind != 'a' || len(e.arr) == 0 || len(e.arr) > maxEnum {
				return 0, schemaErr("enum", pathJoin(path, "enum"), "must be a non-empty array of at most %d values", maxEnum)
			}
			var values []string
			for _, v := range e.arr {
				if v.kind != 's' {
					return 0, schemaErr("enum", pathJoin(path, "enum"), "a string parameter's values must be strings")
				}
				values = append(values, quote(v.str))
			}
			values, err := c.filterValues(s, values, "enum", path, depth)
			if err != nil {
				return 0, err
			}
			for _, v := range values {
				var str string
				_ = json.Unmarshal([]byte(v), &str) // quote wrote it
				c.b.addAlt(r, c.b.lit(str)...)
			}
			return r, nil
		}
	}
	return c.compile(s, path, depth)
}

// allStrings reports whether e is a non-empty array of strings only.
func allStrings(e *jv) bool {
	if e.kind != 'a' || len(e.arr) == 0 {
		return false
	}
	for _, v := range e.arr {
		if v.kind != 's' {
			return false
		}
	}
	return true
}

// charNoLT is one UTF-8 character other than '<' (counted text in a parameter).
func (c *schemaCompiler) charNoLT() int32 {
	b := c.b
	r := b.newRule("text-char")
	var ascii byteSet
	ascii.addRange(0x00, 0x7f)
	ascii[0] &^= 1 << '<'
	b.addAlt(r, b.term(ascii))
	for _, seq := range utf8Multi(b) {
		b.addAlt(r, seq...)
	}
	return r
}

// rawText is any text without "</parameter>": the states of a matcher for that word
// (Knuth–Morris–Pratt), none of them completing it.
func (c *schemaCompiler) rawText() int32 {
	const w = "</parameter>"
	b := c.b
	fail := make([]int, len(w)+1)
	fail[0] = -1
	for i := 1; i <= len(w); i++ {
		k := fail[i-1]
		for k >= 0 && w[k] != w[i-1] {
			k = fail[k]
		}
		fail[i] = k + 1
	}
	delta := func(k int, ch byte) int {
		for k >= 0 && (k == len(w) || w[k] != ch) {
			k = fail[k]
		}
		return k + 1
	}
	states := make([]int32, len(w))
	for k := range states {
		states[k] = b.newRule("text" + strconv.Itoa(k))
	}
	for k := range states {
		b.addAlt(states[k])
		var to [len(w) + 1]byteSet
		for ch := range 256 {
			to[delta(k, byte(ch))].add(byte(ch))
		}
		for n := range len(w) {
			if !to[n].empty() {
				b.addAlt(states[k], b.term(to[n]), ref(states[n]))
			}
		}
	}
	return states[0]
}

// anyParams is any parameters, as text.
func (c *schemaCompiler) anyParams() int32 {
	b := c.b
	var name byteSet
	name.addRange('a', 'z')
	name.addRange('A', 'Z')
	name.addRange('0', '9')
	name.add('_')
	name.add('-')
	n := b.repeat("param-name", []elem{b.term(name)}, 1, 64)
	block := b.seqRule("param", append(b.lit("<parameter="), append([]elem{ref(n)}, append(b.lit(">\n"), append([]elem{ref(c.rawText())}, b.lit("\n</parameter>\n")...)...)...)...)...)
	return b.star("params", ref(block))
}
