package main

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/bonsai-go/sdk/bonsai"
)

// The demo tools the model may call with -tools: a clock and a calculator.

// demoTool is a tool with the function that answers it.
type demoTool struct {
	def bonsai.Tool
	run func(args json.RawMessage) (any, error)
}

var demoTools = []demoTool{
	{
		def: bonsai.Tool{Name: "get_time", Description: "The current date and time in a time zone.",
			Parameters: json.RawMessage(`{"type": "object", "properties": {"timezone": {"type": "string", "maxLength": 40,
				"description": "an IANA time zone such as Europe/Paris, or UTC"}}, "required": ["timezone"], "additionalProperties": false}`)},
		run: func(raw json.RawMessage) (any, error) {
			var args struct{ Timezone string }
			if err := json.Unmarshal(raw, &args); err != nil {
				return nil, err
			}
			loc, err := time.LoadLocation(args.Timezone)
			if err != nil {
				return nil, fmt.Errorf("unknown time zone %q", args.Timezone)
			}
			return map[string]string{"time": now().In(loc).Format(time.RFC3339), "timezone": loc.String()}, nil
		},
	},
	{
		def: bonsai.Tool{Name: "calculate", Description: "Evaluate an arithmetic expression: numbers, + - * / ^ % and parentheses.",
			Parameters: json.RawMessage(`{"type": "object", "properties": {"expression": {"type": "string", "maxLength": 80}},
				"required": ["expression"], "additionalProperties": false}`)},
		run: func(raw json.RawMessage) (any, error) {
			var args struct{ Expression string }
			if err := json.Unmarshal(raw, &args); err != nil {
				return nil, err
			}
			v, err := calculate(args.Expression)
			if err != nil {
				return nil, err
			}
			return map[string]float64{"result": v}, nil
		},
	},
}

// now is the clock, for tests.
var now = time.Now

func toolDefs() []bonsai.Tool {
	defs := make([]bonsai.Tool, len(demoTools))
	for i, t := range demoTools {
		defs[i] = t.def
	}
	return defs
}

// callTool answers a call: the result as JSON, or {"error": ...}.
func callTool(c bonsai.ToolCall) string {
	out := any(map[string]string{"error": "no tool " + strconv.Quote(c.Name)})
	for _, t := range demoTools {
		if t.def.Name == c.Name {
			v, err := t.run(c.Arguments)
			if err != nil {
				v = map[string]string{"error": err.Error()}
			}
			out = v
		}
	}
	b, _ := json.Marshal(out)
	return string(b)
}

// calculate evaluates arithmetic by recursive descent: + - * / % with the usual
// precedence, ^ (right-associative), unary signs and parentheses.
func calculate(src string) (float64, error) {
	p := &calc{src: src}
	v, err := p.sum()
	if err == nil && p.peek() != 0 {
		err = fmt.Errorf("unexpected %q at %d", p.src[p.i], p.i)
	}
	if err != nil {
		return 0, fmt.Errorf("calculate %q: %w", src, err)
	}
	return v, nil
}

type calc struct {
	src   string
	i     int
	depth int
}

func (p *calc) peek() byte {
	for p.i < len(p.src) && p.src[p.i] == ' ' {
		p.i++
	}
	if p.i == len(p.src) {
		return 0
	}
	return p.src[p.i]
}

func (p *calc) sum() (float64, error) {
	v, err := p.product()
	for err == nil {
		op := p.peek()
		if op != '+' && op != '-' {
			break
		}
		p.i++
		var r float64
		if r, err = p.product(); op == '+' {
			v += r
		} else {
			v -= r
		}
	}
	return v, err
}

func (p *calc) product() (float64, error) {
	v, err := p.power()
	for err == nil {
		op := p.peek()
		if op != '*' && op != '/' && op != '%' {
			break
		}
		p.i++
		var r float64
		r, err = p.power()
		switch op {
		case '*':
			v *= r
		case '/':
			v /= r
		default:
			v = math.Mod(v, r)
		}
	}
	return v, err
}

func (p *calc) power() (float64, error) {
	b, err := p.atom()
	if err != nil || p.peek() != '^' {
		return b, err
	}
	p.i++
	e, err := p.power()
	return math.Pow(b, e), err
}

func (p *calc) atom() (float64, error) {
	if p.depth++; p.depth > 100 {
		return 0, fmt.Errorf("nested too deep")
	}
	defer func() { p.depth-- }()
	switch c := p.peek(); {
	case c == '(':
		p.i++
		v, err := p.sum()
		if err != nil {
			return 0, err
		}
		if p.peek() != ')' {
			return 0, fmt.Errorf("')' expected at %d", p.i)
		}
		p.i++
		return v, nil
	case c == '-' || c == '+':
		p.i++
		v, err := p.atom()
		if c == '-' {
			v = -v
		}
		return v, err
	}
	start := p.i
	for p.i < len(p.src) && strings.IndexByte("0123456789.eE", p.src[p.i]) >= 0 {
		if (p.src[p.i] == 'e' || p.src[p.i] == 'E') && p.i+1 < len(p.src) && (p.src[p.i+1] == '-' || p.src[p.i+1] == '+') {
			p.i++
		}
		p.i++
	}
	v, err := strconv.ParseFloat(p.src[start:p.i], 64)
	if err != nil {
		return 0, fmt.Errorf("a number expected at %d", start)
	}
	return v, nil
}
