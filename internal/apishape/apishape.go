// Package apishape checks a response body against the Go type an official client
// decodes it into (openai-go, anthropic-sdk-go), for the tests of the dialects that
// serve those APIs.
//
// The SDKs' types are generated from the APIs' specifications: a field the response
// always carries is tagged api:"required" (or json:",required"), a constant one
// default:"value", and each type records what it decoded in a JSON metadata struct of
// respjson.Field values, one per field, which tell a field left out from a null one and
// from one of the wrong type. A required field of a nullable type is still required:
// it is sent as null when empty. A union type (ContentBlockUnion) is checked as the
// variant its AsAny method picks.
//
// Check walks the decoded value by reflection, so a field a client type declares that
// a response lacks is found without a list of fields to keep up to date.
package apishape

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// meta is what a respjson.Field tells of a field, in both SDKs.
type meta interface {
	Raw() string // the field's JSON, "" when it was left out
	Valid() bool // present, not null, and of the field's type
}

// Check decodes body into a new T and returns its mismatches with T, each
// "path: problem": a required field missing, a field that does not decode as its type,
// a constant of another value, a union of no known variant.
func Check[T any](body []byte) []string {
	var v T
	if err := json.Unmarshal(body, &v); err != nil {
		return []string{fmt.Sprintf("$: does not decode as %T: %v", v, err)}
	}
	var problems []string
	walk("$", reflect.ValueOf(v), &problems)
	return problems
}

var metaType = reflect.TypeFor[meta]()

func walk(path string, v reflect.Value, problems *[]string) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walk(path, v.Elem(), problems)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			walk(fmt.Sprintf("%s[%d]", path, i), v.Index(i), problems)
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			walk(fmt.Sprintf("%s[%v]", path, iter.Key()), iter.Value(), problems)
		}
	case reflect.Struct:
		walkStruct(path, v, problems)
	}
}

func walkStruct(path string, v reflect.Value, problems *[]string) {
	t := v.Type()
	if as := v.MethodByName("AsAny"); as.IsValid() && strings.HasSuffix(t.Name(), "Union") && as.Type().NumIn() == 0 && as.Type().NumOut() == 1 {
		variant := as.Call(nil)[0]
		if variant.IsNil() {
			*problems = append(*problems, fmt.Sprintf("%s: no variant of %s matches", path, t))
			return
		}
		walk(path, variant, problems)
		return
	}
	metas := v.FieldByName("JSON")
	if !metas.IsValid() || metas.Kind() != reflect.Struct {
		return // not an SDK type (time.Time)
	}
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "" || name == "-" {
			continue
		}
		mf := metas.FieldByName(f.Name)
		if !mf.IsValid() || !mf.Type().Implements(metaType) {
			continue
		}
		m := mf.Interface().(meta)
		at := path + "." + name
		raw := m.Raw()
		if raw == "" {
			if required(f, opts) {
				*problems = append(*problems, fmt.Sprintf("%s: missing (%s.%s is required; send null when empty)", at, t, f.Name))
			}
			continue
		}
		if !m.Valid() {
			if raw != "null" {
				*problems = append(*problems, fmt.Sprintf("%s: %s does not decode as %s", at, raw, f.Type))
			}
			continue
		}
		if def, ok := f.Tag.Lookup("default"); ok && f.Type.Kind() == reflect.String {
			var got string
			if json.Unmarshal([]byte(raw), &got) != nil || got != def {
				*problems = append(*problems, fmt.Sprintf("%s: %s, want %q", at, raw, def))
			}
		}
		walk(at, v.Field(i), problems)
	}
}

// required reports whether the client type declares f required: api:"required", the
// older json:",required", or a constant (default:"value"), which is always sent.
func required(f reflect.StructField, jsonOpts string) bool {
	if _, ok := f.Tag.Lookup("default"); ok {
		return true
	}
	for o := range strings.SplitSeq(f.Tag.Get("api"), ",") {
		if o == "required" {
			return true
		}
	}
	for o := range strings.SplitSeq(jsonOpts, ",") {
		if o == "required" {
			return true
		}
	}
	return false
}
