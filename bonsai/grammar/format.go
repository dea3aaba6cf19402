package grammar

import "strings"

// The format keyword: each supported format is a pattern of the subset that
// patternRule compiles, anchored, accepting the format's strings or, where noted, a
// practical subset of them — never a string the format rejects.
//
//   - date: RFC 3339 full-date, YYYY-MM-DD, the day checked against the month and leap
//     years.
//   - time: RFC 3339 full-time, HH:MM:SS, an optional fraction of 1 to 9 digits, then
//     Z or ±HH:MM; upper-case Z only, no leap second (a subset).
//   - date-time: date "T" time (upper-case T).
//   - duration: ISO 8601 as RFC 3339's appendix A writes it: PnYnMnDTnHnMnS with at
//     least one part and a T only before a time part, or PnW; numbers of 1 to 9 digits.
//   - uuid: 8-4-4-4-12 hex digits, either case.
//   - ipv4: dotted decimal, no leading zeros.
//   - ipv6: RFC 4291's text forms (RFC 3986's IPv6address), with "::" and a trailing
//     IPv4 address; no zone.
//   - hostname: 1 to 4 labels of letters, digits and inner hyphens, each at most 63
//     characters (a subset: at most 4 labels keeps it under 253).
//   - email: a practical subset: a dot-atom local part of at most 4 atoms of at most
//     15 characters, "@", then 2 to 4 labels of at most 32 characters, the last of
//     letters (a TLD).
//   - uri: a practical subset of RFC 3986's absolute URI: scheme "://" host (a
//     hostname or an IPv4 address) and an optional port of 1 to 4 digits, then an
//     optional path, query and fragment of unreserved characters, sub-delims, ":",
//     "@", "/", "?" and percent escapes.
//
// Any other format is an annotation, as JSON Schema reads it by default: ignored.
var formats = func() map[string]string {
	const (
		leap    = `(\d\d(0[48]|[2468][048]|[13579][26])|([02468][048]|[13579][26])00)`
		day31   = `(0[13578]|1[02])-(0[1-9]|[12]\d|3[01])`
		day30   = `(0[469]|11)-(0[1-9]|[12]\d|30)`
		feb     = `02-(0[1-9]|1\d|2[0-8])`
		date    = `(\d{4}-(` + day31 + `|` + day30 + `|` + feb + `)|` + leap + `-02-29)`
		hms     = `([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{1,9})?`
		offset  = `(Z|[+-]([01]\d|2[0-3]):[0-5]\d)`
		h16     = `[0-9a-fA-F]{1,4}`
		dec     = `(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)`
		ipv4    = dec + `(\.` + dec + `){3}`
		label   = `[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?`
		label32 = `[a-zA-Z0-9]([a-zA-Z0-9-]{0,30}[a-zA-Z0-9])?`
		atom    = "[a-zA-Z0-9!#$%&'*+/=?^_`{|}~-]{1,15}"
		n       = `\d{1,9}`
		pchar   = `([a-zA-Z0-9._~!$&'()*+,;=:@-]|%[0-9a-fA-F]{2})`
	)
	ls32 := `(` + h16 + `:` + h16 + `|` + ipv4 + `)`
	ipv6 := strings.Join([]string{
		`(` + h16 + `:){6}` + ls32,
		`::(` + h16 + `:){5}` + ls32,
		`(` + h16 + `)?::(` + h16 + `:){4}` + ls32,
		`((` + h16 + `:){0,1}` + h16 + `)?::(` + h16 + `:){3}` + ls32,
		`((` + h16 + `:){0,2}` + h16 + `)?::(` + h16 + `:){2}` + ls32,
		`((` + h16 + `:){0,3}` + h16 + `)?::` + h16 + `:` + ls32,
		`((` + h16 + `:){0,4}` + h16 + `)?::` + ls32,
		`((` + h16 + `:){0,5}` + h16 + `)?::` + h16,
		`((` + h16 + `:){0,6}` + h16 + `)?::`,
	}, "|")
	timePart := `T(` + n + `H(` + n + `M)?(` + n + `S)?|` + n + `M(` + n + `S)?|` + n + `S)`
	datePart := `(` + n + `Y(` + n + `M)?(` + n + `D)?|` + n + `M(` + n + `D)?|` + n + `D)`
	hostname := label + `(\.` + label + `){0,3}`
	return map[string]string{
		"date":      `^` + date + `$`,
		"time":      `^` + hms + offset + `$`,
		"date-time": `^` + date + `T` + hms + offset + `$`,
		"duration":  `^P(` + datePart + `(` + timePart + `)?|` + timePart + `|` + n + `W)$`,
		"uuid":      `^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`,
		"ipv4":      `^` + ipv4 + `$`,
		"ipv6":      `^(` + ipv6 + `)$`,
		"hostname":  `^` + hostname + `$`,
		"email":     `^` + atom + `(\.` + atom + `){0,3}@` + label32 + `(\.` + label32 + `){0,2}\.[a-zA-Z]{2,32}$`,
		"uri":       `^[a-zA-Z][a-zA-Z0-9+.-]{0,15}://(` + hostname + `|` + ipv4 + `)(:[1-9]\d{0,3})?(/` + pchar + `*)*(\?(` + pchar + `|[/?])*)?(#(` + pchar + `|[/?])*)?$`,
	}
}()
