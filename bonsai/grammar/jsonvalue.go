package grammar

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// jv is a decoded JSON value that keeps the order of object keys.
type jv struct {
	kind byte // 'o' object, 'a' array, 's' string, 'n' number, 'b' bool, 'z' null
	keys []string
	vals []*jv
	arr  []*jv
	str  string
	num  json.Number
	b    bool
}

func (v *jv) get(k string) *jv {
	if v == nil || v.kind != 'o' {
		return nil
	}
	for i, key := range v.keys {
		if key == k {
			return v.vals[i]
		}
	}
	return nil
}

// maxJSONDepth bounds the nesting of a schema document.
const maxJSONDepth = 64

func parseJV(data []byte) (*jv, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeJV(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("text after the JSON value")
	}
	return v, nil
}

func decodeJV(dec *json.Decoder, depth int) (*jv, error) {
	if depth > maxJSONDepth {
		return nil, fmt.Errorf("nested deeper than %d", maxJSONDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			v := &jv{kind: 'o'}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				for _, seen := range v.keys {
					if seen == k {
						return nil, fmt.Errorf("key %q given twice", k)
					}
				}
				item, err := decodeJV(dec, depth+1)
				if err != nil {
					return nil, err
				}
				v.keys, v.vals = append(v.keys, k), append(v.vals, item)
			}
			_, err := dec.Token()
			return v, err
		case '[':
			v := &jv{kind: 'a'}
			for dec.More() {
				item, err := decodeJV(dec, depth+1)
				if err != nil {
					return nil, err
				}
				v.arr = append(v.arr, item)
			}
			_, err := dec.Token()
			return v, err
		}
	case string:
		return &jv{kind: 's', str: t}, nil
	case json.Number:
		return &jv{kind: 'n', num: t}, nil
	case bool:
		return &jv{kind: 'b', b: t}, nil
	case nil:
		return &jv{kind: 'z'}, nil
	}
	return nil, fmt.Errorf("unexpected %v", tok)
}

// compact writes v as compact JSON, as encoding/json writes it without HTML escapes.
func (v *jv) compact(b *strings.Builder) {
	switch v.kind {
	case 'o':
		b.WriteByte('{')
		for i, k := range v.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(quote(k))
			b.WriteByte(':')
			v.vals[i].compact(b)
		}
		b.WriteByte('}')
	case 'a':
		b.WriteByte('[')
		for i, x := range v.arr {
			if i > 0 {
				b.WriteByte(',')
			}
			x.compact(b)
		}
		b.WriteByte(']')
	case 's':
		b.WriteString(quote(v.str))
	case 'n':
		b.WriteString(v.num.String())
	case 'b':
		if v.b {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case 'z':
		b.WriteString("null")
	}
}

func quote(s string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(buf.String(), "\n")
}
