package grammar

import (
	"encoding/json"
	"math/rand/v2"
	"net"
	"net/mail"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// formatRefs are independent readings of each format. exact: the grammar accepts
// every string the reference accepts (within the stated subset: upper-case T and Z,
// fractions of at most 9 digits); otherwise it accepts a subset of them.
var formatRefs = map[string]struct {
	ok    func(s string) bool
	exact bool
	valid []string
}{
	"date": {func(s string) bool { _, err := time.Parse(time.DateOnly, s); return err == nil && len(s) == 10 }, true,
		[]string{"2024-02-29", "2000-02-29", "1999-12-31", "0001-01-01", "2023-04-30"}},
	// Go reads an hour of one digit too, and an offset of 24 hours; RFC 3339 does not.
	"time": {func(s string) bool {
		_, err := time.Parse("15:04:05Z07:00", s)
		return err == nil && len(s) >= 9 && s[2] == ':' && s[5] == ':' && offsetOK(s)
	}, true,
		[]string{"00:00:00Z", "23:59:59.123456789+05:30", "12:30:00-08:00", "09:05:01.5Z"}},
	"date-time": {func(s string) bool {
		// As for time.
		_, err := time.Parse(time.RFC3339, s)
		return err == nil && len(s) >= 20 && s[13] == ':' && s[16] == ':' && offsetOK(s)
	}, true,
		[]string{"2024-02-29T23:59:59Z", "1970-01-01T00:00:00.1+01:00", "2023-12-31T12:00:00-23:59"}},
	"uuid": {uuidRE.MatchString, true, []string{"123e4567-e89b-12d3-a456-426614174000", "ABCDEF01-2345-6789-abcd-ef0123456789"}},
	"ipv4": {func(s string) bool {
		ip := net.ParseIP(s)
		return ip != nil && ip.To4() != nil && !strings.Contains(s, ":")
	}, true,
		[]string{"0.0.0.0", "255.255.255.255", "192.168.1.10", "10.0.99.249"}},
	"ipv6": {func(s string) bool { return net.ParseIP(s) != nil && strings.Contains(s, ":") }, true,
		[]string{"::", "::1", "1::", "2001:db8::8a2e:370:7334", "1:2:3:4:5:6:7:8", "::ffff:192.0.2.1", "1:2:3:4:5:6:1.2.3.4", "1::2:3:4:5:6:7", "fe80::1:2"}},
	"hostname": {isHostname, false, []string{"example.com", "a", "x-1.y-2.z", "localhost"}},
	"email": {func(s string) bool {
		a, err := mail.ParseAddress(s)
		return err == nil && a.Address == s && isHostname(s[strings.LastIndexByte(s, '@')+1:])
	}, false, []string{"a@b.co", "first.last+tag@sub.example.org", "x_y-z@host-1.io"}},
	"uri": {func(s string) bool {
		u, err := url.Parse(s)
		return err == nil && u.IsAbs() && u.Host != ""
	}, false, []string{"https://example.com", "http://1.2.3.4:8080/a/b?q=1&r=%20#frag", "ftp://x.y/~u/", "urn+x://h/p:q@r"}},
	"duration": {isDuration, true, []string{"P1Y", "P1Y2M3DT4H5M6S", "PT0S", "P3W", "PT1H30M", "P2D"}},
}

// offsetOK checks an offset's hour: Go reads up to 24, RFC 3339 up to 23.
func offsetOK(s string) bool {
	return strings.HasSuffix(s, "Z") || len(s) >= 6 && s[len(s)-5:len(s)-3] < "24"
}

// isHostname is RFC 1123's hostname: labels of 1 to 63 letters, digits and inner
// hyphens, at most 253 characters.
func isHostname(s string) bool {
	if len(s) == 0 || len(s) > 253 {
		return false
	}
	for _, l := range strings.Split(s, ".") {
		if len(l) == 0 || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, c := range l {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// isDuration reads ISO 8601 durations by hand: P, then date parts in the order Y M D
// and, after a T, time parts H M S, at least one part on each side of a T; or PnW.
func isDuration(s string) bool {
	rest, ok := strings.CutPrefix(s, "P")
	if !ok || rest == "" {
		return false
	}
	part := func(r string, units string) (string, bool) {
		last := -1
		n := 0
		for r != "" {
			i := 0
			for i < len(r) && r[i] >= '0' && r[i] <= '9' {
				i++
			}
			if i == 0 || i > 9 || i == len(r) {
				return r, n > 0 || r == ""
			}
			u := strings.IndexByte(units, r[i])
			if u <= last {
				return "", false
			}
			last, n, r = u, n+1, r[i+1:]
		}
		return "", n > 0
	}
	if w, ok := strings.CutSuffix(rest, "W"); ok {
		return len(w) > 0 && len(w) <= 9 && strings.Trim(w, "0123456789") == ""
	}
	date, tpart, hasT := strings.Cut(rest, "T")
	if date != "" {
		if r, ok := part(date, "YMD"); !ok || r != "" {
			return false
		}
	}
	if hasT {
		if r, ok := part(tpart, "HMS"); !ok || r != "" || tpart == "" {
			return false
		}
	}
	return date != "" || hasT
}

// Each format's grammar accepts its valid examples, writes only strings its reference
// accepts, and on mutations of them never accepts what the reference rejects (and
// accepts all it accepts, for the exact ones).
func TestFormats(t *testing.T) {
	require.Len(t, formatRefs, len(formats))
	for name, ref := range formatRefs {
		g, err := CompileJSONSchema([]byte(`{"type":"string","format":"`+name+`"}`), SchemaOptions{})
		require.NoError(t, err, name)
		matches, m0 := matcher(g)
		rng := rand.New(rand.NewPCG(uint64(len(name)), 11))
		texts := append([]string{}, ref.valid...)
		for _, s := range ref.valid {
			require.True(t, ref.ok(s), "%s: the reference rejects the example %q", name, s)
			require.True(t, matches(jsonString(t, s)), "%s: %q", name, s)
		}
		walked := 0
		for range 300 {
			out, ok := walkFrom(m0, rng, 200)
			if !ok {
				continue
			}
			walked++
			var s string
			require.NoError(t, json.Unmarshal(out, &s))
			require.True(t, ref.ok(s), "%s: the grammar wrote %q", name, s)
			texts = append(texts, s)
		}
		assert.Greater(t, walked, 250, name)
		al := []rune("0123456789:-+.TZtzPWYMDHSabcdefABCDEF@/?#%_~ x")
		accepted, rejected := 0, 0
		for _, s := range texts {
			for range 10 {
				m := mutate(rng, s, al)
				got := matches(jsonString(t, m))
				want := ref.ok(m)
				if got {
					require.True(t, want, "%s: the grammar accepts %q", name, m)
					accepted++
				} else {
					rejected++
				}
				if ref.exact && want && !strings.ContainsAny(m, "tz") && !tooLongFraction(m) {
					require.True(t, got, "%s: the grammar rejects %q", name, m)
				}
			}
		}
		assert.Positive(t, accepted, name)
		assert.Positive(t, rejected, name)
	}
}

// tooLongFraction reports a fraction of seconds longer than the grammar's 9 digits.
func tooLongFraction(s string) bool {
	return regexp.MustCompile(`\.\d{10}`).MatchString(s)
}

// An unknown format is an annotation; a format on another type is ignored.
func TestFormatAnnotation(t *testing.T) {
	g, err := CompileJSONSchema([]byte(`{"type":"string","format":"int32"}`), SchemaOptions{})
	require.NoError(t, err)
	assert.True(t, matches(g, `"anything"`))
	g, err = CompileJSONSchema([]byte(`{"type":"integer","format":"date"}`), SchemaOptions{})
	require.NoError(t, err)
	assert.True(t, matches(g, `12`))
	g, err = CompileJSONSchema([]byte(`{"format":"ipv4"}`), SchemaOptions{})
	require.NoError(t, err)
	assert.True(t, matches(g, `"1.2.3.4"`))
	assert.False(t, matches(g, `"1.2.3"`))
	assert.False(t, matches(g, `12`))
}
