package grammar

import (
	"errors"
	"fmt"
)

// ErrInvalidSchema is wrapped by every error for a schema or grammar the engine does not
// accept: malformed, unsupported, or hostile (too deep, too large).
var ErrInvalidSchema = errors.New("invalid schema")

// SchemaError says what in a schema or grammar was not accepted.
type SchemaError struct {
	// Keyword is the schema keyword ("type", "minLength", "$ref") or, for a GBNF
	// grammar, "grammar".
	Keyword string
	// Path is the JSON pointer of the schema node ("/properties/city"), or for a GBNF
	// grammar the rule and offset.
	Path string
	// Reason says what was wrong.
	Reason string
}

// Error returns "invalid schema: KEYWORD at PATH: REASON".
func (e *SchemaError) Error() string {
	path := e.Path
	if path == "" {
		path = "/"
	}
	return fmt.Sprintf("%v: %s at %s: %s", ErrInvalidSchema, e.Keyword, path, e.Reason)
}

// Unwrap returns ErrInvalidSchema, so that errors.Is finds it.
func (e *SchemaError) Unwrap() error { return ErrInvalidSchema }

func schemaErr(keyword, path, format string, args ...any) error {
	return &SchemaError{Keyword: keyword, Path: path, Reason: fmt.Sprintf(format, args...)}
}
