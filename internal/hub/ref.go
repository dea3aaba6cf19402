package hub

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"
)

// badRune is a character no path in a repository holds: a backslash (a separator on
// Windows) or a control character.
func badRune(r rune) bool { return r == '\\' || r < 0x20 || r == 0x7f }

// Ref is a file on the Hub, as a model reference names it.
type Ref struct {
	Repo     string // ORG/NAME
	Revision string // "" for the default, main
	File     string // the path in the repository, '/'-separated
}

// String formats r as ParseRef reads it.
func (r Ref) String() string {
	rev := ""
	if r.Revision != "" {
		rev = "@" + url.PathEscape(r.Revision)
	}
	return "hf:" + r.Repo + rev + "/" + r.File
}

// Prefix starts a model reference.
const Prefix = "hf:"

// IsRef reports whether s is meant as a model reference (starts with "hf:"), so that a
// caller sends it to ParseRef rather than treating it as a path.
func IsRef(s string) bool { return strings.HasPrefix(s, Prefix) }

// ParseRef reads a model reference, hf:ORG/NAME/FILE or hf:ORG/NAME@REVISION/FILE (also
// with "hf://"), the syntax of huggingface_hub's HfFileSystem: FILE may hold '/', and a
// REVISION holding '/' (refs/pr/1) is written escaped (refs%2Fpr%2F1). The repository
// and the file are checked as the Hub would name them, so that a malformed reference is
// refused here, naming the fault, rather than by the Hub as "not found".
func ParseRef(s string) (Ref, error) {
	rest, ok := strings.CutPrefix(s, Prefix)
	if !ok {
		return Ref{}, fmt.Errorf("model reference %q: does not start with %q", s, Prefix)
	}
	rest = strings.TrimPrefix(rest, "//")
	org, rest, _ := strings.Cut(rest, "/")
	name, file, ok := strings.Cut(rest, "/")
	if !ok || org == "" || name == "" || file == "" {
		return Ref{}, fmt.Errorf("model reference %q: want hf:ORG/NAME/FILE or hf:ORG/NAME@REVISION/FILE", s)
	}
	var r Ref
	if n, rev, ok := strings.Cut(name, "@"); ok {
		dec, err := url.PathUnescape(rev)
		if err != nil || dec == "" {
			return Ref{}, fmt.Errorf("model reference %q: revision %q is not a valid escaped revision", s, rev)
		}
		name, r.Revision = n, dec
		if err := CheckRevision(r.Revision); err != nil {
			return Ref{}, fmt.Errorf("model reference %q: %w", s, err)
		}
	}
	r.Repo, r.File = org+"/"+name, file
	if err := CheckRepo(r.Repo); err != nil {
		return Ref{}, fmt.Errorf("model reference %q: %w", s, err)
	}
	if err := CheckFile(r.File); err != nil {
		return Ref{}, fmt.Errorf("model reference %q: %w", s, err)
	}
	return r, nil
}

// repoPart is one part of a repository id as huggingface_hub's validate_repo_id accepts
// it: word characters, '-' and '.', starting and ending with a word character.
var repoPart = regexp.MustCompile(`^[A-Za-z0-9_]([A-Za-z0-9_.-]*[A-Za-z0-9_])?$`)

// CheckRepo checks a repository id, ORG/NAME or (legacy) NAME, as huggingface_hub does.
func CheckRepo(repo string) error {
	parts := strings.Split(repo, "/")
	if len(repo) > 96 || len(parts) > 2 || strings.Contains(repo, "--") || strings.Contains(repo, "..") {
		return fmt.Errorf("repository %q: not ORG/NAME of letters, digits, '_', '-' and '.' (at most 96, no \"--\" or \"..\")", repo)
	}
	for _, p := range parts {
		if !repoPart.MatchString(p) {
			return fmt.Errorf("repository %q: not ORG/NAME of letters, digits, '_', '-' and '.' (at most 96, no \"--\" or \"..\")", repo)
		}
	}
	return nil
}

// CheckFile checks a path in a repository: relative, '/'-separated, with no empty, "."
// or ".." part (which would leave the snapshot's directory in the cache).
func CheckFile(file string) error {
	if file == "" {
		return fmt.Errorf("file name is empty")
	}
	if strings.ContainsFunc(file, badRune) || !utf8.ValidString(file) {
		return fmt.Errorf("file %q: holds a backslash, a control character or invalid UTF-8", file)
	}
	for _, p := range strings.Split(file, "/") {
		if p == "" || p == "." || p == ".." {
			return fmt.Errorf("file %q: not a relative path of named parts (no empty, \".\" or \"..\" part)", file)
		}
	}
	return nil
}

// CheckRevision checks a branch, tag or commit: it names a file under refs/ in the
// cache, so it must not climb out of it.
func CheckRevision(rev string) error {
	if rev == "" {
		return nil
	}
	// Git's rules for ref names (git check-ref-format), less the rarer ones.
	if strings.ContainsFunc(rev, badRune) || strings.ContainsAny(rev, " ~^:?*[") || !utf8.ValidString(rev) {
		return fmt.Errorf("revision %q: holds a character git refuses in a ref name", rev)
	}
	for _, p := range strings.Split(rev, "/") {
		if p == "" || p == "." || p == ".." {
			return fmt.Errorf("revision %q: has an empty, \".\" or \"..\" part", rev)
		}
	}
	return nil
}
