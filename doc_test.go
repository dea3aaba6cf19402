package sdk

import (
	"fmt"
	"go/ast"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// undocumented lists, as "file:line: what", the exported identifiers of one package's
// files that have no doc comment: the package clause (in none of the files), types,
// functions, methods of exported types, constants and variables (a doc comment on their
// group counts, as go doc shows it), and the exported fields of exported structs and
// methods of exported interfaces (see members).
func undocumented(fset *token.FileSet, files []*ast.File) []string {
	var out []string
	report := func(pos token.Pos, format string, args ...any) {
		p := fset.Position(pos)
		out = append(out, fmt.Sprintf("%s:%d: %s", filepath.Base(p.Filename), p.Line, fmt.Sprintf(format, args...)))
	}
	pkgDoc := false
	for _, f := range files {
		pkgDoc = pkgDoc || f.Doc != nil
	}
	if !pkgDoc && len(files) > 0 {
		report(files[0].Package, "package %s has no package doc comment", files[0].Name.Name)
	}
	for _, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() || d.Doc != nil {
					continue
				}
				if d.Recv == nil {
					report(d.Pos(), "func %s", d.Name.Name)
				} else if recv := receiverType(d.Recv.List[0].Type); ast.IsExported(recv) {
					report(d.Pos(), "method %s.%s", recv, d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if !s.Name.IsExported() {
							continue
						}
						doc := s.Doc
						if doc == nil && !d.Lparen.IsValid() {
							doc = d.Doc
						}
						if doc == nil {
							report(s.Pos(), "type %s", s.Name.Name)
						}
						members(fset, s, doc, report)
					case *ast.ValueSpec:
						if s.Doc != nil || d.Doc != nil || s.Comment != nil {
							continue
						}
						for _, n := range s.Names {
							if n.IsExported() {
								report(n.Pos(), "%s %s", d.Tok, n.Name)
							}
						}
					}
				}
			}
		}
	}
	return out
}

// members reports the undocumented exported fields of an exported struct type and
// methods of an exported interface type. A member is documented by a doc or line
// comment of its own; by the comment of a run of members it belongs to (members on one
// line, "Seq, First int", or on consecutive lines under one comment, with no blank line
// between them); or by the type's doc comment, when that names it (go doc shows the two
// together: "tokens [First, First+N) of batch[Seq]").
func members(fset *token.FileSet, s *ast.TypeSpec, typeDoc *ast.CommentGroup, report func(token.Pos, string, ...any)) {
	var list *ast.FieldList
	what := "field"
	switch t := s.Type.(type) {
	case *ast.StructType:
		list = t.Fields
	case *ast.InterfaceType:
		list, what = t.Methods, "method"
	default:
		return
	}
	covered := false
	for _, f := range list.List {
		if blankLineBefore(fset, f, list) {
			covered = false // a blank line ends a run
		}
		if f.Doc != nil {
			covered = true // a run starts under the comment
			continue
		}
		if f.Comment != nil {
			continue // documents this line, not the next
		}
		if covered {
			continue
		}
		for _, n := range f.Names {
			if n.IsExported() && !names(typeDoc, n.Name) {
				report(n.Pos(), "%s %s.%s", what, s.Name.Name, n.Name)
			}
		}
	}
}

// blankLineBefore reports whether a blank line separates f from the member before it in
// list, which ends the run a comment above them documents.
func blankLineBefore(fset *token.FileSet, f *ast.Field, list *ast.FieldList) bool {
	i := slices.Index(list.List, f)
	if i <= 0 {
		return true
	}
	prev := fset.Position(list.List[i-1].End()).Line
	return fset.Position(f.Pos()).Line > prev+1
}

// names reports whether doc mentions name as a word.
func names(doc *ast.CommentGroup, name string) bool {
	if doc == nil {
		return false
	}
	return slices.Contains(strings.FieldsFunc(doc.Text(), func(r rune) bool {
		return !(r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r))
	}), name)
}

// receiverType is the name of a method's receiver type: T for T, *T, T[P] and *T[P].
func receiverType(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.Ident:
			return t.Name
		default:
			return ""
		}
	}
}

// publicPackages returns the directories of the module's packages that a user imports:
// not internal, not testdata, not the command-line programs (package main), not
// another module's (examples/serve/deploy).
func publicPackages(t *testing.T) map[string][]string {
	t.Helper()
	dirs := map[string][]string{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != "." && (name == "internal" || name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") {
			dirs[filepath.Dir(path)] = append(dirs[filepath.Dir(path)], path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// ignored reports whether a file is left out of every build by the tag "ignore" (a
// generator's source, //go:build ignore), and so is no part of the package's API.
func ignored(f *ast.File) bool {
	for _, g := range f.Comments {
		if g.Pos() > f.Package {
			break
		}
		for _, c := range g.List {
			expr, err := constraint.Parse(c.Text)
			if err != nil {
				continue // not a build constraint
			}
			usesIgnore := false
			on := expr.Eval(func(tag string) bool {
				usesIgnore = usesIgnore || tag == "ignore"
				return tag != "ignore" // every other tag set: some platform builds it
			})
			if usesIgnore && !on {
				return true
			}
		}
	}
	return false
}

// Every exported identifier of the packages a user imports has a doc comment, as go doc
// and pkg.go.dev show them: the files of every platform are read, not only this one's.
func TestExportsDocumented(t *testing.T) {
	fset := token.NewFileSet()
	checked := 0
	var findings []string
	for dir, paths := range publicPackages(t) {
		var files []*ast.File
		for _, p := range paths {
			f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			if f.Name.Name == "main" || ignored(f) {
				continue
			}
			files = append(files, f)
		}
		if len(files) == 0 {
			continue
		}
		checked++
		for _, u := range undocumented(fset, files) {
			findings = append(findings, filepath.ToSlash(dir)+"/"+u)
		}
	}
	if checked < 10 {
		t.Fatalf("only %d packages checked: the walk missed the module", checked)
	}
	slices.Sort(findings)
	for _, f := range findings {
		t.Errorf("undocumented: %s", f)
	}
}

// The check finds each kind of undocumented export, and takes each kind of doc it
// accepts: the list below is this source's undocumented exports, read off by hand.
func TestUndocumentedCatches(t *testing.T) {
	const src = `package p

type T struct {
	A int
	// B is documented, and so is C, on the next line of the same run.
	B int
	C int

	D    int // D has a line comment.
	E, F int // E and F share one, which does not document H.
	H    int

	G int
	h int
}

// U is documented; so is its field X, which this comment names.
type U struct {
	X, Y int
}

// I is an interface.
type I interface {
	M()
	// N is documented.
	N()
}

func F() {}

// G is documented.
func G() {}

func (T) M()  {}
func (*T) N() {}
func (u) M()  {}

type u int

const K = 1

// The group's doc documents L and M.
const (
	L = 1
	M = 2
)

var (
	V1 = 1
	V2 = 2 // V2 has a line comment.
	v3 = 3
)
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"p.go:1: package p has no package doc comment",
		"p.go:3: type T",
		"p.go:4: field T.A",
		"p.go:11: field T.H",
		"p.go:13: field T.G",
		"p.go:19: field U.Y",
		"p.go:24: method I.M",
		"p.go:29: func F",
		"p.go:34: method T.M",
		"p.go:35: method T.N",
		"p.go:40: const K",
		"p.go:49: var V1",
	}
	got := undocumented(fset, []*ast.File{f})
	if !slices.Equal(got, want) {
		t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// A package doc in any one of its files documents the package.
	doc, err := parser.ParseFile(fset, "doc.go", "// Package p is documented.\npackage p\n", parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	if got := undocumented(fset, []*ast.File{f, doc}); slices.Contains(got, want[0]) {
		t.Errorf("the package doc in doc.go was not seen: %q", got)
	}
}

// A generator's source (//go:build ignore) is no part of the API; a platform's file is.
func TestIgnoredFiles(t *testing.T) {
	for src, want := range map[string]bool{
		"//go:build ignore\n\npackage p\n":                      true,
		"//go:build ignore && linux\n\npackage p\n":             true,
		"//go:build darwin\n\npackage p\n":                      false,
		"//go:build !purego\n\npackage p\n":                     false,
		"// Package p.\npackage p\n":                            false,
		"//go:build !(amd64 || arm64) || purego\n\npackage p\n": false,
	} {
		f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if got := ignored(f); got != want {
			t.Errorf("ignored(%q) = %v, want %v", src, got, want)
		}
	}
}
