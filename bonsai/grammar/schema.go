package grammar

import (
	"strconv"
	"strings"
)

// SchemaOptions adjust CompileJSONSchema.
type SchemaOptions struct {
	// Strict is OpenAI's strict flag. It changes nothing today: the output is always
	// valid under the schema, and objects without additionalProperties are closed
	// either way (see CompileJSONSchema).
	Strict bool
}

// Limits on what a schema may ask, against hostile input.
const (
	maxSchemaDepth = 32    // nesting of subschemas
	maxEnum        = 1024  // values of an enum
	maxCount       = 10000 // minLength/maxLength/minItems/maxItems
	maxProperties  = 1024
)

// CompileJSONSchema compiles a JSON Schema into the grammar of the JSON values it
// accepts, written compactly: no whitespace before or after the value or around
// brackets, and at most one space after each ',' and ':' (a model cannot spend its
// tokens on whitespace; see sepRule).
//
// Supported: type (one or a list), object with properties, required and
// additionalProperties (false, true or a schema), array with items, minItems and
// maxItems, string with minLength and maxLength (in characters), pattern (a subset of
// ECMA-262, see regex.go) or format (date, time, date-time, duration, uuid, ipv4, ipv6,
// hostname, email, uri: see format.go), integer (with minimum, maximum,
// exclusiveMinimum and exclusiveMaximum, within ±10^15), number (with the same bounds,
// of at most 16 decimals: it is then written without exponent), multipleOf on either
// (see numrange.go), boolean, null, enum and const (the values the rest of the schema
// accepts), anyOf and oneOf (read as anyOf), allOf of one schema, $ref to "#",
// "#/$defs/…" or "#/definitions/…" (recursion allowed), and the annotations (title,
// description, default, examples, $schema, $id, $comment, deprecated, readOnly,
// writeOnly, and a format not listed above). Any other keyword that changes which
// values are valid (not, uniqueItems, …) is an error naming it, as is what the
// supported ones cannot express (a pattern outside the subset, a pattern or format
// beside minLength or maxLength, a bound of more decimals): the grammar never accepts
// what the schema rejects. Properties the schema lists are written in its order; an
// object without additionalProperties is closed (a subset of what the schema allows, as
// llama.cpp reads it).
func CompileJSONSchema(schema []byte, opt SchemaOptions) (*Grammar, error) {
	doc, err := parseJV(schema)
	if err != nil {
		return nil, schemaErr("schema", "", "not valid JSON: %v", err)
	}
	c := newSchemaCompiler(doc, opt)
	r, err := c.compile(doc, "", 0)
	if err != nil {
		return nil, err
	}
	b := c.b
	root := b.seqRule("root", ref(r))
	g, err := b.build(root)
	if err != nil {
		return nil, schemaErr("schema", "", "%v", err)
	}
	return g, nil
}

type schemaCompiler struct {
	b    *builder
	doc  *jv
	opt  SchemaOptions
	refs map[string]int32
	// classes remembers the rule of each character set of a pattern.
	classes map[string]int32
	// fracs are the fraction rules of bounded numbers.
	fracs map[fracSpec]int32
	// shared rules, made on first use
	ws, leadWS, str, num, integer, any, char, boolean, null int32
}

func newSchemaCompiler(doc *jv, opt SchemaOptions) *schemaCompiler {
	return &schemaCompiler{b: newBuilder(), doc: doc, opt: opt, refs: map[string]int32{}, classes: map[string]int32{},
		ws: -1, leadWS: -1, str: -1, num: -1, integer: -1, any: -1, char: -1, boolean: -1, null: -1}
}

// sepRule is the whitespace after a ',' or ':' between JSON tokens: none or one
// space. It is the only whitespace the grammar of a schema allows — none before the
// value, after it, around brackets or before a separator — so that a model cannot
// spend its tokens on whitespace: a value of n separators holds at most n spaces, and
// no newline.
func (c *schemaCompiler) sepRule() int32 {
	if c.ws < 0 {
		b := c.b
		c.ws = b.newRule("sep")
		b.addAlt(c.ws)
		b.addAlt(c.ws, b.lit(" ")...)
	}
	return c.ws
}

// lead is the whitespace allowed before a tool call's markup: up to two newlines or
// spaces.
func (c *schemaCompiler) lead() int32 {
	if c.leadWS < 0 {
		var s byteSet
		s.add(' ')
		s.add('\n')
		c.leadWS = c.b.repeat("lead", []elem{c.b.term(s)}, 0, 2)
	}
	return c.leadWS
}

// charRule is one character of a JSON string: unescaped (valid UTF-8, no control
// character, quote or backslash) or an escape.
func (c *schemaCompiler) charRule() int32 {
	if c.char >= 0 {
		return c.char
	}
	b := c.b
	r := b.newRule("char")
	var ascii byteSet
	ascii.addRange(0x20, 0x7f)
	ascii[0x22>>6] &^= 1 << (0x22 & 63)
	ascii[0x5c>>6] &^= 1 << (0x5c & 63)
	b.addAlt(r, b.term(ascii))
	var esc, hex byteSet
	for _, e := range `"\/bfnrt` {
		esc.add(byte(e))
	}
	b.addAlt(r, b.term(single('\\')), b.term(esc))
	hex.addRange('0', '9')
	hex.addRange('a', 'f')
	hex.addRange('A', 'F')
	h := b.term(hex)
	b.addAlt(r, b.term(single('\\')), b.term(single('u')), h, h, h, h)
	for _, seq := range utf8Multi(b) {
		b.addAlt(r, seq...)
	}
	c.char = r
	return r
}

// utf8Rows are the well-formed multi-byte UTF-8 sequences, each a row of byte ranges
// (Unicode's table 3-7).
var utf8Rows = [][][2]byte{
	{{0xC2, 0xDF}, {0x80, 0xBF}},
	{{0xE0, 0xE0}, {0xA0, 0xBF}, {0x80, 0xBF}},
	{{0xE1, 0xEC}, {0x80, 0xBF}, {0x80, 0xBF}},
	{{0xED, 0xED}, {0x80, 0x9F}, {0x80, 0xBF}},
	{{0xEE, 0xEF}, {0x80, 0xBF}, {0x80, 0xBF}},
	{{0xF0, 0xF0}, {0x90, 0xBF}, {0x80, 0xBF}, {0x80, 0xBF}},
	{{0xF1, 0xF3}, {0x80, 0xBF}, {0x80, 0xBF}, {0x80, 0xBF}},
	{{0xF4, 0xF4}, {0x80, 0x8F}, {0x80, 0xBF}, {0x80, 0xBF}},
}

// utf8Multi returns utf8Rows as byte-class sequences.
func utf8Multi(b *builder) [][]elem {
	var out [][]elem
	for _, row := range utf8Rows {
		seq := make([]elem, len(row))
		for i, r := range row {
			var s byteSet
			s.addRange(r[0], r[1])
			seq[i] = b.term(s)
		}
		out = append(out, seq)
	}
	return out
}

// stringSchema is the rule of a string schema's values: minLength and maxLength, or a
// pattern, or a format, written as JSON strings (enc encJSON, with the quotes) or as a
// tool-call parameter's raw text (encRaw).
func (c *schemaCompiler) stringSchema(s *jv, path string, enc encoding) (int32, error) {
	min, hasMin, err := c.count(s, "minLength", pathJoin(path, "minLength"))
	if err != nil {
		return 0, err
	}
	max, hasMax, err := c.count(s, "maxLength", pathJoin(path, "maxLength"))
	if err != nil {
		return 0, err
	}
	if !hasMax {
		max = -1
	} else if max < min {
		return 0, schemaErr("maxLength", pathJoin(path, "maxLength"), "less than minLength")
	}
	var pattern, which string
	if p := s.get("pattern"); p != nil {
		if p.kind != 's' {
			return 0, schemaErr("pattern", pathJoin(path, "pattern"), "must be a string")
		}
		pattern, which = p.str, "pattern"
	}
	if f := s.get("format"); f != nil && f.kind == 's' && formats[f.str] != "" {
		if which != "" {
			return 0, schemaErr("format", pathJoin(path, "format"), "format beside pattern is not supported")
		}
		pattern, which = formats[f.str], "format"
	}
	if which == "" {
		if enc == encRaw {
			if min > 0 || hasMax {
				return c.b.repeat("raw-bounded", []elem{ref(c.charNoLT())}, min, max), nil
			}
			return c.rawText(), nil
		}
		return c.stringRule(min, max), nil
	}
	if hasMin || hasMax {
		k := "minLength"
		if !hasMin {
			k = "maxLength"
		}
		return 0, schemaErr(which, pathJoin(path, which), "%s beside %s is not supported", which, k)
	}
	body, err := c.patternRule(pattern, enc)
	if err != nil {
		if err == errTooLarge {
			return 0, schemaErr(which, pathJoin(path, which), "the pattern makes too large a grammar")
		}
		return 0, schemaErr(which, pathJoin(path, which), "%v", err)
	}
	if enc == encRaw {
		return body, nil
	}
	q := c.b.term(single('"'))
	return c.b.seqRule("string", q, ref(body), q), nil
}

// knownFormat reports whether s has a format the compiler enforces.
func knownFormat(s *jv) bool {
	f := s.get("format")
	return f != nil && f.kind == 's' && formats[f.str] != ""
}

func (c *schemaCompiler) stringRule(min, max int) int32 {
	if min == 0 && max < 0 && c.str >= 0 {
		return c.str
	}
	b := c.b
	body := b.repeat("chars", []elem{ref(c.charRule())}, min, max)
	q := b.term(single('"'))
	r := b.seqRule("string", q, ref(body), q)
	if min == 0 && max < 0 {
		c.str = r
	}
	return r
}

func digits(b *builder) (d, d19 elem) {
	var s, t byteSet
	s.addRange('0', '9')
	t.addRange('1', '9')
	return b.term(s), b.term(t)
}

// integerRule: -?(0|[1-9][0-9]{0,15}).
func (c *schemaCompiler) integerRule() int32 {
	if c.integer >= 0 {
		return c.integer
	}
	b := c.b
	d, d19 := digits(b)
	sign := b.newRule("sign")
	b.addAlt(sign)
	b.addAlt(sign, b.lit("-")...)
	rest := b.repeat("digits", []elem{d}, 0, 15)
	mag := b.newRule("magnitude")
	b.addAlt(mag, b.lit("0")...)
	b.addAlt(mag, d19, ref(rest))
	c.integer = b.seqRule("integer", ref(sign), ref(mag))
	return c.integer
}

// numberRule: an integer, then optionally a fraction and an exponent.
func (c *schemaCompiler) numberRule() int32 {
	if c.num >= 0 {
		return c.num
	}
	b := c.b
	d, _ := digits(b)
	frac := b.newRule("frac")
	b.addAlt(frac)
	b.addAlt(frac, append(b.lit("."), ref(b.repeat("fdigits", []elem{d}, 1, 16)))...)
	var e, pm byteSet
	e.add('e')
	e.add('E')
	pm.add('+')
	pm.add('-')
	sign := b.newRule("esign")
	b.addAlt(sign)
	b.addAlt(sign, b.term(pm))
	exp := b.newRule("exp")
	b.addAlt(exp)
	b.addAlt(exp, b.term(e), ref(sign), ref(b.repeat("edigits", []elem{d}, 1, 3)))
	c.num = b.seqRule("number", ref(c.integerRule()), ref(frac), ref(exp))
	return c.num
}

func (c *schemaCompiler) literal(name, s string) int32 {
	return c.b.seqRule(name, c.b.lit(s)...)
}

// anyRule is any JSON value.
func (c *schemaCompiler) anyRule() int32 {
	if c.any >= 0 {
		return c.any
	}
	b := c.b
	c.any = b.newRule("value")
	sep := ref(c.sepRule())
	// object: "{" ( member ( "," sep member )* )? "}"
	member := b.seqRule("member", ref(c.stringRule(0, -1)), b.term(single(':')), sep, ref(c.any))
	more := b.star("members", append(b.lit(","), sep, ref(member))...)
	body := b.newRule("object-body")
	b.addAlt(body)
	b.addAlt(body, ref(member), ref(more))
	obj := b.seqRule("object", b.term(single('{')), ref(body), b.term(single('}')))
	items := b.star("items", append(b.lit(","), sep, ref(c.any))...)
	abody := b.newRule("array-body")
	b.addAlt(abody)
	b.addAlt(abody, ref(c.any), ref(items))
	arr := b.seqRule("array", b.term(single('[')), ref(abody), b.term(single(']')))
	for _, r := range []int32{obj, arr, c.stringRule(0, -1), c.numberRule(), c.literal("true", "true"), c.literal("false", "false"), c.literal("null", "null")} {
		b.addAlt(c.any, ref(r))
	}
	return c.any
}

// annotations are keywords that do not change which values are valid.
var annotations = map[string]bool{
	"title": true, "description": true, "default": true, "examples": true, "format": true,
	"$schema": true, "$id": true, "$comment": true, "deprecated": true, "readOnly": true,
	"writeOnly": true, "$defs": true, "definitions": true, "strict": true, "name": true,
	"contentMediaType": true, "contentEncoding": true, "discriminator": true, "nullable": false,
}

// known are the keywords the compiler reads.
var known = map[string]bool{
	"type": true, "properties": true, "required": true, "additionalProperties": true,
	"items": true, "minItems": true, "maxItems": true, "minLength": true, "maxLength": true,
	"pattern": true, "enum": true, "const": true, "anyOf": true, "oneOf": true, "allOf": true, "$ref": true,
	"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true,
	"multipleOf": true,
}

func pathJoin(path string, parts ...string) string {
	for _, p := range parts {
		p = strings.ReplaceAll(strings.ReplaceAll(p, "~", "~0"), "/", "~1")
		path += "/" + p
	}
	return path
}

func (c *schemaCompiler) count(s *jv, key, path string) (int, bool, error) {
	v := s.get(key)
	if v == nil {
		return 0, false, nil
	}
	if v.kind != 'n' {
		return 0, false, schemaErr(key, path, "must be a non-negative integer")
	}
	n, err := strconv.Atoi(v.num.String())
	if err != nil || n < 0 {
		return 0, false, schemaErr(key, path, "must be a non-negative integer, not %s", v.num)
	}
	if n > maxCount {
		return 0, false, schemaErr(key, path, "%d is more than the %d supported", n, maxCount)
	}
	return n, true, nil
}

// compile returns the rule of the values schema s accepts.
func (c *schemaCompiler) compile(s *jv, path string, depth int) (int32, error) {
	if depth > maxSchemaDepth {
		return 0, schemaErr("schema", path, "nested deeper than %d", maxSchemaDepth)
	}
	switch s.kind {
	case 'b':
		if s.b {
			return c.anyRule(), nil
		}
		return 0, schemaErr("schema", path, "false accepts no value")
	case 'o':
	default:
		return 0, schemaErr("schema", path, "a schema must be an object or a boolean")
	}
	for _, k := range s.keys {
		if !known[k] && !annotations[k] {
			return 0, schemaErr(k, pathJoin(path, k), "keyword not supported")
		}
	}
	if r := s.get("$ref"); r != nil {
		if len(s.keys) > 1 {
			for _, k := range s.keys {
				if known[k] && k != "$ref" {
					return 0, schemaErr("$ref", path, "$ref beside %s is not supported", k)
				}
			}
		}
		return c.ref(r, path, depth)
	}
	if e := s.get("enum"); e != nil {
		return c.enum(s, e, "enum", path, depth)
	}
	if k := s.get("const"); k != nil {
		return c.enum(s, &jv{kind: 'a', arr: []*jv{k}}, "const", path, depth)
	}
	if all := s.get("allOf"); all != nil {
		if all.kind != 'a' || len(all.arr) != 1 {
			return 0, schemaErr("allOf", pathJoin(path, "allOf"), "only an allOf of one schema is supported")
		}
		return c.compile(all.arr[0], pathJoin(path, "allOf", "0"), depth+1)
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		if alts := s.get(key); alts != nil {
			if alts.kind != 'a' || len(alts.arr) == 0 {
				return 0, schemaErr(key, pathJoin(path, key), "must be a non-empty array of schemas")
			}
			r := c.b.newRule(key)
			for i, a := range alts.arr {
				sub, err := c.compile(a, pathJoin(path, key, strconv.Itoa(i)), depth+1)
				if err != nil {
					return 0, err
				}
				c.b.addAlt(r, ref(sub))
			}
			return r, nil
		}
	}
	var types []string
	if t := s.get("type"); t != nil {
		switch t.kind {
		case 's':
			types = []string{t.str}
		case 'a':
			for _, x := range t.arr {
				if x.kind != 's' {
					return 0, schemaErr("type", pathJoin(path, "type"), "must be a string or an array of strings")
				}
				types = append(types, x.str)
			}
		default:
			return 0, schemaErr("type", pathJoin(path, "type"), "must be a string or an array of strings")
		}
	} else {
		switch {
		case s.get("properties") != nil || s.get("additionalProperties") != nil || s.get("required") != nil:
			types = []string{"object"}
		case s.get("items") != nil || s.get("minItems") != nil || s.get("maxItems") != nil:
			types = []string{"array"}
		case s.get("minLength") != nil || s.get("maxLength") != nil || s.get("pattern") != nil || knownFormat(s):
			types = []string{"string"}
		case s.get("minimum") != nil || s.get("maximum") != nil || s.get("exclusiveMinimum") != nil || s.get("exclusiveMaximum") != nil || s.get("multipleOf") != nil:
			types = []string{"number"}
		default:
			return c.anyRule(), nil
		}
	}
	if len(types) == 0 {
		return 0, schemaErr("type", pathJoin(path, "type"), "an empty list of types accepts no value")
	}
	r := c.b.newRule("typed")
	for _, t := range types {
		sub, err := c.typed(s, t, path, depth)
		if err != nil {
			return 0, err
		}
		c.b.addAlt(r, ref(sub))
	}
	return r, nil
}

func (c *schemaCompiler) typed(s *jv, t, path string, depth int) (int32, error) {
	switch t {
	case "string":
		return c.stringSchema(s, path, encJSON)
	case "integer":
		k, _, err := c.multipleOf(s, path)
		if err != nil {
			return 0, err
		}
		if k > 0 {
			return c.multipleRule(k), nil
		}
		lo, hi, err := c.intBounds(s, path)
		if err != nil {
			return 0, err
		}
		if lo == nil && hi == nil {
			return c.integerRule(), nil
		}
		return c.intRangeRule(lo, hi), nil
	case "number":
		k, decimals, err := c.multipleOf(s, path)
		if err != nil {
			return 0, err
		}
		switch {
		case k > 0:
			return c.multipleRule(k), nil
		case decimals > 0:
			return c.decimalsRule(decimals), nil
		}
		lo, hi, err := c.numBounds(s, path)
		if err != nil {
			return 0, err
		}
		if lo.v == nil && hi.v == nil {
			return c.numberRule(), nil
		}
		r, ok := c.numberRangeRule(lo, hi)
		if !ok {
			return 0, schemaErr("minimum", path, "no number lies between the bounds")
		}
		return r, nil
	case "boolean":
		if c.boolean < 0 {
			c.boolean = c.b.newRule("boolean")
			c.b.addAlt(c.boolean, c.b.lit("true")...)
			c.b.addAlt(c.boolean, c.b.lit("false")...)
		}
		return c.boolean, nil
	case "null":
		if c.null < 0 {
			c.null = c.literal("null", "null")
		}
		return c.null, nil
	case "object":
		return c.object(s, path, depth)
	case "array":
		return c.array(s, path, depth)
	}
	return 0, schemaErr("type", pathJoin(path, "type"), "unknown type %q", t)
}

func (c *schemaCompiler) object(s *jv, path string, depth int) (int32, error) {
	b := c.b
	sep := ref(c.sepRule())
	props := s.get("properties")
	if props != nil && props.kind != 'o' {
		return 0, schemaErr("properties", pathJoin(path, "properties"), "must be an object")
	}
	if props != nil && len(props.keys) > maxProperties {
		return 0, schemaErr("properties", pathJoin(path, "properties"), "%d properties, more than the %d supported", len(props.keys), maxProperties)
	}
	required := map[string]bool{}
	if req := s.get("required"); req != nil {
		if req.kind != 'a' {
			return 0, schemaErr("required", pathJoin(path, "required"), "must be an array of strings")
		}
		for _, x := range req.arr {
			if x.kind != 's' {
				return 0, schemaErr("required", pathJoin(path, "required"), "must be an array of strings")
			}
			if props.get(x.str) == nil {
				return 0, schemaErr("required", pathJoin(path, "required"), "%q is not among the properties", x.str)
			}
			required[x.str] = true
		}
	}
	// The additional properties: closed unless the schema opens them.
	var extra int32 = -1
	if ap := s.get("additionalProperties"); ap != nil {
		switch {
		case ap.kind == 'b' && !ap.b:
		case ap.kind == 'b' || ap.kind == 'o':
			v, err := c.compile(ap, pathJoin(path, "additionalProperties"), depth+1)
			if err != nil {
				return 0, err
			}
			extra = b.seqRule("extra-member", ref(c.stringRule(0, -1)), b.term(single(':')), sep, ref(v))
		default:
			return 0, schemaErr("additionalProperties", pathJoin(path, "additionalProperties"), "must be a boolean or a schema")
		}
	} else if props == nil {
		// {"type": "object"} alone: any object.
		v := c.anyRule()
		extra = b.seqRule("extra-member", ref(c.stringRule(0, -1)), b.term(single(':')), sep, ref(v))
	}
	var n int
	var kv []int32
	var req []bool
	if props != nil {
		n = len(props.keys)
		for i, k := range props.keys {
			v, err := c.compile(props.vals[i], pathJoin(path, "properties", k), depth+1)
			if err != nil {
				return 0, err
			}
			kv = append(kv, b.seqRule("kv-"+k, append(b.lit(quote(k)), b.term(single(':')), sep, ref(v))...))
			req = append(req, required[k])
		}
	}
	// first[i]: the members from property i on, none written yet; rest[i]: the same
	// after a member was written (each then begins with a comma).
	rest := make([]int32, n+1)
	first := make([]int32, n+1)
	rest[n] = b.newRule("rest-end")
	if extra >= 0 {
		more := b.star("extra", append(b.lit(","), sep, ref(extra))...)
		b.addAlt(rest[n], ref(more))
	} else {
		b.addAlt(rest[n])
	}
	first[n] = b.newRule("first-end")
	b.addAlt(first[n])
	if extra >= 0 {
		b.addAlt(first[n], ref(extra), ref(rest[n]))
	}
	for i := n - 1; i >= 0; i-- {
		rest[i] = b.newRule("rest")
		b.addAlt(rest[i], append(b.lit(","), sep, ref(kv[i]), ref(rest[i+1]))...)
		first[i] = b.newRule("first")
		b.addAlt(first[i], ref(kv[i]), ref(rest[i+1]))
		if !req[i] {
			b.addAlt(rest[i], ref(rest[i+1]))
			b.addAlt(first[i], ref(first[i+1]))
		}
	}
	body := b.newRule("object-body")
	b.addAlt(body, ref(first[0]))
	return b.seqRule("object", b.term(single('{')), ref(body), b.term(single('}'))), nil
}

func (c *schemaCompiler) array(s *jv, path string, depth int) (int32, error) {
	b := c.b
	sep := ref(c.sepRule())
	var item int32
	if it := s.get("items"); it != nil {
		var err error
		if item, err = c.compile(it, pathJoin(path, "items"), depth+1); err != nil {
			return 0, err
		}
	} else {
		item = c.anyRule()
	}
	min, _, err := c.count(s, "minItems", pathJoin(path, "minItems"))
	if err != nil {
		return 0, err
	}
	max, hasMax, err := c.count(s, "maxItems", pathJoin(path, "maxItems"))
	if err != nil {
		return 0, err
	}
	if !hasMax {
		max = -1
	} else if max < min {
		return 0, schemaErr("maxItems", pathJoin(path, "maxItems"), "less than minItems")
	}
	body := b.newRule("array-body")
	if min == 0 {
		b.addAlt(body)
	}
	if max != 0 {
		more := b.repeat("items", append(b.lit(","), sep, ref(item)), max0(min-1), dec(max))
		b.addAlt(body, ref(item), ref(more))
	}
	return b.seqRule("array", b.term(single('[')), ref(body), b.term(single(']'))), nil
}

func max0(n int) int { return max(n, 0) }
func dec(n int) int {
	if n < 0 {
		return n
	}
	return n - 1
}

// enum is the rule of the values of an enum or const (key), those the rest of the
// schema s accepts when it has other keywords ({"type": "string", "enum": ["a", 1]}
// allows "a" only).
func (c *schemaCompiler) enum(s, e *jv, key, path string, depth int) (int32, error) {
	kp := pathJoin(path, key)
	if e.kind != 'a' || len(e.arr) == 0 {
		return 0, schemaErr("enum", kp, "must be a non-empty array")
	}
	if len(e.arr) > maxEnum {
		return 0, schemaErr("enum", kp, "%d values, more than the %d supported", len(e.arr), maxEnum)
	}
	values := make([]string, len(e.arr))
	for i, v := range e.arr {
		var sb strings.Builder
		v.compact(&sb)
		values[i] = sb.String()
	}
	values, err := c.filterValues(s, values, key, path, depth)
	if err != nil {
		return 0, err
	}
	r := c.b.newRule(key)
	for _, v := range values {
		c.b.addAlt(r, c.b.lit(v)...)
	}
	return r, nil
}

// filterValues returns the values (JSON texts) of an enum or const (key) that the
// rest of the schema s accepts, compiled alone, when it has other keywords.
func (c *schemaCompiler) filterValues(s *jv, values []string, key, path string, depth int) ([]string, error) {
	kp := pathJoin(path, key)
	rest := &jv{kind: 'o'}
	validating := false
	for i, k := range s.keys {
		if k == "enum" || k == "const" {
			continue
		}
		rest.keys, rest.vals = append(rest.keys, k), append(rest.vals, s.vals[i])
		validating = validating || known[k]
	}
	if validating {
		sc := newSchemaCompiler(c.doc, c.opt)
		r, err := sc.compile(rest, path, depth)
		if err != nil {
			return nil, err
		}
		g, err := sc.b.build(sc.b.seqRule("root", ref(r)))
		if err != nil {
			return nil, schemaErr(key, kp, "%v", err)
		}
		m0 := NewMatcher(g)
		var kept []string
		for _, v := range values {
			m := &Matcher{a: m0.a, cur: m0.cur, err: m0.err}
			if m.Accept([]byte(v)) == nil && m.Accepting() {
				kept = append(kept, v)
			}
		}
		if len(kept) == 0 {
			return nil, schemaErr(key, kp, "no value is valid under the rest of the schema")
		}
		values = kept
	}
	return values, nil
}

func (c *schemaCompiler) ref(r *jv, path string, depth int) (int32, error) {
	kw := pathJoin(path, "$ref")
	if r.kind != 's' {
		return 0, schemaErr("$ref", kw, "must be a string")
	}
	p := r.str
	if id, ok := c.refs[p]; ok {
		return id, nil
	}
	if !strings.HasPrefix(p, "#") {
		return 0, schemaErr("$ref", kw, "only references within the schema (#…) are supported, not %q", p)
	}
	target := c.doc
	ptr := strings.TrimPrefix(p, "#")
	if ptr != "" {
		if !strings.HasPrefix(ptr, "/") {
			return 0, schemaErr("$ref", kw, "%q is not a JSON pointer", p)
		}
		for _, part := range strings.Split(ptr[1:], "/") {
			part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
			switch {
			case target.kind == 'o':
				target = target.get(part)
			case target.kind == 'a':
				i, err := strconv.Atoi(part)
				if err != nil || i < 0 || i >= len(target.arr) {
					target = nil
				} else {
					target = target.arr[i]
				}
			default:
				target = nil
			}
			if target == nil {
				return 0, schemaErr("$ref", kw, "%q points to nothing", p)
			}
		}
	}
	// A rule for the target, made before compiling it so that recursion refers to it.
	id := c.b.newRule("ref " + p)
	c.refs[p] = id
	sub, err := c.compile(target, ptr, depth+1)
	if err != nil {
		return 0, err
	}
	c.b.addAlt(id, ref(sub))
	return id, nil
}
