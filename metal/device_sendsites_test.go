package metal

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The send-site check: every objc_msgSend the darwin code makes, read from its source
// with go/parser (so it runs on Linux), against the C prototype of its selector in
// objcPrototypes. Metal does not report a call through the wrong C signature: it reads
// garbage registers or crashes, on a Mac, later.

// objcDecl is a prototype parsed into kinds.
type objcDecl struct {
	sel  string
	ret  string   // void, int, bool, id, ptr, struct N, float N
	args []string // int, id, ptr, errptr, struct N, float N
	cTyp []string // the C type of each argument as written
}

var (
	objcPartRE = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*):\(`)
	objcHeadRE = regexp.MustCompile(`^([-+])\s*\(`)
)

// parseObjCDecl parses "- (RET)part:(TYPE)name part:(TYPE)name;".
func parseObjCDecl(decl string) (*objcDecl, error) {
	s := strings.TrimSpace(decl)
	if !strings.HasSuffix(s, ";") || !objcHeadRE.MatchString(s) {
		return nil, fmt.Errorf("%q: not a method declaration", decl)
	}
	s = strings.TrimSuffix(s, ";")
	ret, rest, err := parenGroup(s[strings.IndexByte(s, '('):])
	if err != nil {
		return nil, fmt.Errorf("%q: %v", decl, err)
	}
	d := &objcDecl{}
	if d.ret, err = cKind(ret, true); err != nil {
		return nil, fmt.Errorf("%q: result: %v", decl, err)
	}
	rest = strings.TrimSpace(rest)
	if !strings.Contains(rest, ":") {
		if !devSelPlainRE.MatchString(rest) {
			return nil, fmt.Errorf("%q: bad selector %q", decl, rest)
		}
		d.sel = rest
		return d, nil
	}
	for rest != "" {
		m := objcPartRE.FindStringSubmatchIndex(rest)
		if m == nil || m[0] != 0 {
			return nil, fmt.Errorf("%q: cannot parse %q", decl, rest)
		}
		d.sel += rest[m[2]:m[3]] + ":"
		typ, after, err := parenGroup(rest[m[1]-1:])
		if err != nil {
			return nil, fmt.Errorf("%q: %v", decl, err)
		}
		k, err := cKind(typ, false)
		if err != nil {
			return nil, fmt.Errorf("%q: argument %d: %v", decl, len(d.args)+1, err)
		}
		d.args = append(d.args, k)
		d.cTyp = append(d.cTyp, typ)
		after = strings.TrimSpace(after)
		// the parameter name
		i := 0
		for i < len(after) && (after[i] == '_' || 'a' <= after[i] && after[i] <= 'z' || 'A' <= after[i] && after[i] <= 'Z' || '0' <= after[i] && after[i] <= '9') {
			i++
		}
		if i == 0 {
			return nil, fmt.Errorf("%q: argument %d has no name", decl, len(d.args))
		}
		rest = strings.TrimSpace(after[i:])
	}
	return d, nil
}

// parenGroup splits "(inside)rest" at the matching parenthesis.
func parenGroup(s string) (string, string, error) {
	if !strings.HasPrefix(s, "(") {
		return "", "", fmt.Errorf("expected ( at %q", s)
	}
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return strings.TrimSpace(s[1:i]), s[i+1:], nil
			}
		}
	}
	return "", "", fmt.Errorf("unbalanced parentheses in %q", s)
}

var objcObjectRE = regexp.MustCompile(`^(id<[A-Za-z0-9_, ]+>|(NS|MTL)[A-Za-z0-9_]*(<.*>)?\s*\*)$`)

// cKind maps a C type to its kind (objcCTypes; object pointers and blocks by form).
func cKind(typ string, result bool) (string, error) {
	t := strings.Join(strings.Fields(typ), " ")
	if k, ok := objcCTypes[t]; ok {
		if t == "BOOL" && result {
			return "bool", nil // one byte in w0: the rest of x0 is undefined
		}
		if k == "void" && !result {
			return "", fmt.Errorf("void argument")
		}
		return k, nil
	}
	switch {
	case t == "NSError **":
		return "errptr", nil
	case objcObjectRE.MatchString(t):
		return "id", nil
	case strings.Contains(t, "(^)"):
		return "id", nil // a block is an object pointer
	}
	return "", fmt.Errorf("C type %q is not in objcCTypes", typ)
}

// lowerArg is the register class AAPCS64 gives a C argument kind: one integer register
// for integers, objects and pointers, a pointer to a caller-made copy for a struct
// larger than 16 bytes (B.4); a struct of 16 bytes or less (two registers or an HFA) and
// floats (v registers) have no sender.
func lowerArg(kind string) (string, error) {
	switch kind {
	case "int", "id":
		return "word", nil
	case "ptr":
		return "ptr", nil
	case "errptr":
		return "errptr", nil
	}
	if n, ok := strings.CutPrefix(kind, "struct "); ok {
		size, _ := strconv.Atoi(n)
		if size > 16 {
			return "ptr", nil
		}
		return "", fmt.Errorf("a %d-byte struct is passed in registers; no sender does that", size)
	}
	return "", fmt.Errorf("%s arguments go in floating-point registers; no sender does that", kind)
}

func lowerRet(kind string) (string, error) {
	switch kind {
	case "void", "int", "id", "bool":
		return "word", nil
	case "ptr":
		return "ptr", nil
	}
	return "", fmt.Errorf("a %s result does not come back in x0", kind)
}

// sender is one typed sender of device_darwin.go, read from its declaration.
type sender struct {
	args []string // word, ptr, errptr
	ret  string   // word, ptr
	regs int      // the registers its call passes (c.call(fn, N))
}

// sendSite is a resolved call.
type sendSite struct {
	pos    string
	sender string
	selVar string
	call   *ast.CallExpr
	fn     *ast.FuncDecl
	parent ast.Node
}

// checkSendSites checks the darwin sources (file name → text) against the prototypes
// and returns one message per problem.
func checkSendSites(files map[string]string, protos map[string]string) []string {
	var errs []string
	fail := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	fset := token.NewFileSet()
	var parsed []*ast.File
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		f, err := parser.ParseFile(fset, n, files[n], 0)
		if err != nil {
			return []string{err.Error()}
		}
		parsed = append(parsed, f)
	}
	// selector variables: selX = defMsgY("name", "recv")
	type selDef struct{ name, sig string }
	selVars := map[string]selDef{}
	senders := map[string]*sender{}
	structs := map[string]*ast.StructType{}
	for _, f := range parsed {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ValueSpec:
				for i, v := range n.Values {
					call, ok := v.(*ast.CallExpr)
					if !ok || i >= len(n.Names) {
						continue
					}
					id, ok := call.Fun.(*ast.Ident)
					if !ok || !strings.HasPrefix(id.Name, "defMsg") || len(call.Args) != 2 {
						continue
					}
					lit, ok := call.Args[0].(*ast.BasicLit)
					if !ok {
						fail("%s: selector of %s is not a string literal", fset.Position(call.Pos()), n.Names[i].Name)
						continue
					}
					s, _ := strconv.Unquote(lit.Value)
					sig := "msg" + strings.TrimPrefix(id.Name, "defMsg")
					selVars[n.Names[i].Name] = selDef{s, sig}
				}
			case *ast.TypeSpec:
				if st, ok := n.Type.(*ast.StructType); ok {
					structs[n.Name.Name] = st
				}
			case *ast.FuncDecl:
				if n.Recv == nil || len(n.Recv.List) != 1 || !strings.HasPrefix(n.Name.Name, "msg") {
					return true
				}
				if star, ok := n.Recv.List[0].Type.(*ast.StarExpr); !ok || fmt.Sprint(star.X) != "objcCaller" {
					return true
				}
				s := &sender{}
				var params []ast.Expr
				for _, p := range n.Type.Params.List {
					for range max(1, len(p.Names)) {
						params = append(params, p.Type)
					}
				}
				if len(params) < 2 {
					fail("sender %s takes %d parameters", n.Name.Name, len(params))
					return false
				}
				for _, p := range params[2:] {
					s.args = append(s.args, goKind(p))
				}
				if n.Type.Results != nil && len(n.Type.Results.List) == 1 {
					s.ret = goKind(n.Type.Results.List[0].Type)
				}
				ast.Inspect(n.Body, func(m ast.Node) bool {
					if c, ok := m.(*ast.CallExpr); ok {
						if se, ok := c.Fun.(*ast.SelectorExpr); ok && se.Sel.Name == "call" && len(c.Args) == 2 {
							if lit, ok := c.Args[1].(*ast.BasicLit); ok {
								s.regs, _ = strconv.Atoi(lit.Value)
							}
						}
					}
					return true
				})
				senders[n.Name.Name] = s
				return false
			}
			return true
		})
	}
	for name, s := range senders {
		if s.regs != 2+len(s.args) {
			fail("sender %s: passes %d registers for self, _cmd and %d arguments", name, s.regs, len(s.args))
		}
		for _, a := range s.args {
			if a == "?" {
				fail("sender %s: an argument type that is not uintptr, *uintptr or unsafe.Pointer", name)
			}
		}
	}
	// the prototypes
	decls := map[string]*objcDecl{}
	for sel, p := range protos {
		d, err := parseObjCDecl(p)
		if err != nil {
			fail("prototype of %s: %v", sel, err)
			continue
		}
		if d.sel != sel {
			fail("prototype of %s declares %s", sel, d.sel)
			continue
		}
		decls[sel] = d
	}
	for v, def := range selVars {
		d := decls[def.name]
		if d == nil {
			fail("selector %s (%s) has no prototype in objcPrototypes", def.name, v)
			continue
		}
		s := senders[def.sig]
		if s == nil {
			fail("selector %s: no sender %s", def.name, def.sig)
			continue
		}
		if len(d.args) != len(s.args) {
			fail("selector %s: the header declares %d arguments, sender %s passes %d", def.name, len(d.args), def.sig, len(s.args))
			continue
		}
		for i, k := range d.args {
			low, err := lowerArg(k)
			if err != nil {
				fail("selector %s: argument %d (%s): %v", def.name, i+1, d.cTyp[i], err)
			} else if low != s.args[i] {
				fail("selector %s: argument %d is %s (%s, a %s register) but sender %s passes a %s", def.name, i+1, d.cTyp[i], k, low, def.sig, s.args[i])
			}
		}
		if low, err := lowerRet(d.ret); err != nil {
			fail("selector %s: %v", def.name, err)
		} else if low != s.ret {
			fail("selector %s: the result is %s (%s) but sender %s returns a %s", def.name, d.ret, low, def.sig, s.ret)
		}
	}
	// the send sites
	sites := 0
	for _, f := range parsed {
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			var stack []ast.Node
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if n == nil {
					stack = stack[:len(stack)-1]
					return true
				}
				var parent ast.Node
				if len(stack) > 0 {
					parent = stack[len(stack)-1]
				}
				stack = append(stack, n)
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				se, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				s := senders[se.Sel.Name]
				if s == nil {
					return true
				}
				pos := fset.Position(call.Pos()).String()
				sites++
				if len(call.Args) < 2 {
					fail("%s: %s with %d arguments", pos, se.Sel.Name, len(call.Args))
					return true
				}
				_, ok = call.Args[1].(*ast.Ident)
				def, known := selVars[fmt.Sprint(call.Args[1])]
				if !ok || !known {
					fail("%s: %s sends %s, which is not a selector of the table", pos, se.Sel.Name, exprString(fset, call.Args[1]))
					return true
				}
				if def.sig != se.Sel.Name {
					fail("%s: %s (%s) sent with %s", pos, def.name, def.sig, se.Sel.Name)
				}
				if got := len(call.Args) - 2; got != len(s.args) {
					fail("%s: %s: %d arguments, the sender takes %d", pos, def.name, got, len(s.args))
					return true
				}
				d := decls[def.name]
				if d == nil {
					return true
				}
				if len(d.args) != len(call.Args)-2 {
					fail("%s: %s: %d arguments, the header declares %d", pos, def.name, len(call.Args)-2, len(d.args))
					return true
				}
				for i, k := range d.args {
					if n, ok := strings.CutPrefix(k, "struct "); ok {
						want, _ := strconv.Atoi(n)
						ctype := d.cTyp[i]
						goName := objcGoStructs[ctype]
						got, name, err := pointedStruct(call.Args[2+i], fn, structs)
						switch {
						case err != nil:
							fail("%s: %s: argument %d (%s): %v", pos, def.name, i+1, ctype, err)
						case name != goName:
							fail("%s: %s: argument %d points at a %s, want the mirror of %s (%s)", pos, def.name, i+1, name, ctype, goName)
						case got != want:
							fail("%s: %s: argument %d points at %d bytes, %s is %d", pos, def.name, i+1, got, ctype, want)
						}
					}
				}
				switch d.ret {
				case "bool":
					// BOOL comes back in w0's low byte; AAPCS64 leaves the other bits unspecified
					be, ok := parent.(*ast.BinaryExpr)
					if !ok || be.Op != token.AND || be.X != ast.Node(call) || exprString(fset, be.Y) != "0xff" {
						fail("%s: %s returns BOOL: mask the result with &0xff", pos, def.name)
					}
				case "void":
					switch parent.(type) {
					case *ast.ExprStmt, *ast.DeferStmt:
					default:
						fail("%s: %s returns void; its result is used", pos, def.name)
					}
				}
				return true
			})
		}
	}
	if sites == 0 {
		fail("no send sites found")
	}
	sort.Strings(errs)
	return errs
}

func exprString(fset *token.FileSet, e ast.Expr) string {
	switch e := e.(type) {
	case *ast.BasicLit:
		return e.Value
	case *ast.Ident:
		return e.Name
	}
	return fmt.Sprintf("%T", e)
}

// goKind is a sender parameter's register kind.
func goKind(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.Ident:
		if t.Name == "uintptr" {
			return "word"
		}
	case *ast.SelectorExpr:
		if fmt.Sprint(t.X) == "unsafe" && t.Sel.Name == "Pointer" {
			return "ptr"
		}
	case *ast.StarExpr:
		if id, ok := t.X.(*ast.Ident); ok && id.Name == "uintptr" {
			return "errptr"
		}
	}
	return "?"
}

// pointedStruct resolves the Go struct an argument unsafe.Pointer(&x.f[i]) or
// unsafe.Pointer(v) (v := &T{...} in the same function) points at, and its size (every
// field a 64-bit integer or structs.HostLayout).
func pointedStruct(arg ast.Expr, fn *ast.FuncDecl, structs map[string]*ast.StructType) (int, string, error) {
	call, ok := arg.(*ast.CallExpr)
	if !ok || len(call.Args) != 1 || fmt.Sprint(call.Fun) != "&{unsafe Pointer}" {
		return 0, "", fmt.Errorf("not unsafe.Pointer(...)")
	}
	var typeName string
	switch x := call.Args[0].(type) {
	case *ast.UnaryExpr: // &b.sizes[0]
		idx, ok := x.X.(*ast.IndexExpr)
		var field string
		var indexed bool
		if ok {
			indexed = true
			if se, ok := idx.X.(*ast.SelectorExpr); ok {
				field = se.Sel.Name
			}
		} else if se, ok := x.X.(*ast.SelectorExpr); ok {
			field = se.Sel.Name
		}
		if field == "" {
			return 0, "", fmt.Errorf("cannot see the type of the pointer (write &x.field or &x.field[i])")
		}
		for _, st := range structs {
			for _, f := range st.Fields.List {
				for _, n := range f.Names {
					if n.Name != field {
						continue
					}
					t := f.Type
					if indexed {
						at, ok := t.(*ast.ArrayType)
						if !ok {
							return 0, "", fmt.Errorf("field %s is indexed but not an array", field)
						}
						t = at.Elt
					}
					if id, ok := t.(*ast.Ident); ok {
						typeName = id.Name
					} else {
						return 0, "", fmt.Errorf("field %s points at a %T, not a named struct", field, t)
					}
				}
			}
		}
	case *ast.Ident: // v := &T{...}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			as, ok := n.(*ast.AssignStmt)
			if !ok || len(as.Lhs) != 1 || fmt.Sprint(as.Lhs[0]) != x.Name || len(as.Rhs) != 1 {
				return true
			}
			if u, ok := as.Rhs[0].(*ast.UnaryExpr); ok && u.Op == token.AND {
				if cl, ok := u.X.(*ast.CompositeLit); ok {
					if id, ok := cl.Type.(*ast.Ident); ok {
						typeName = id.Name
					}
				}
			}
			return true
		})
	}
	if typeName == "" {
		return 0, "", fmt.Errorf("cannot see the type of the pointer")
	}
	st := structs[typeName]
	if st == nil {
		return 0, typeName, fmt.Errorf("%s is not a struct of the darwin code", typeName)
	}
	size := 0
	for _, f := range st.Fields.List {
		switch t := f.Type.(type) {
		case *ast.Ident:
			switch t.Name {
			case "uint64", "int64", "uintptr":
				size += 8 * max(1, len(f.Names))
				continue
			}
		case *ast.SelectorExpr:
			if fmt.Sprint(t.X) == "structs" && t.Sel.Name == "HostLayout" {
				continue
			}
		}
		return 0, typeName, fmt.Errorf("%s: field of type %s: only 64-bit integers are sized here", typeName, fmt.Sprint(f.Type))
	}
	return size, typeName, nil
}

func darwinSources(t *testing.T) map[string]string {
	t.Helper()
	files := map[string]string{}
	for _, n := range []string{"device_darwin.go", "device_darwin_test.go", "device_selectors.go"} {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		files[n] = string(b)
	}
	return files
}

func TestDeviceSendSites(t *testing.T) {
	files := darwinSources(t)
	for _, e := range checkSendSites(files, objcPrototypes) {
		t.Error(e)
	}
	// every prototype belongs to a selector of the table (no stale entries)
	known := map[string]bool{"instancesRespondToSelector:": true}
	for _, s := range objcSelectors {
		known[s.name] = true
	}
	for sel := range objcPrototypes {
		if !known[sel] {
			t.Errorf("objcPrototypes has %s, which no table sends", sel)
		}
	}
}

// TestDeviceSendSitesNegative: each deliberate mistake is found.
func TestDeviceSendSitesNegative(t *testing.T) {
	files := darwinSources(t)
	mutate := func(file, old, new string) map[string]string {
		t.Helper()
		out := map[string]string{}
		for k, v := range files {
			out[k] = v
		}
		if !strings.Contains(out[file], old) {
			t.Fatalf("%s no longer contains %q; update the test", file, old)
		}
		out[file] = strings.Replace(out[file], old, new, 1)
		return out
	}
	protoWith := func(sel, decl string) map[string]string {
		out := map[string]string{}
		for k, v := range objcPrototypes {
			out[k] = v
		}
		out[sel] = decl
		return out
	}
	for _, c := range []struct {
		name   string
		files  map[string]string
		protos map[string]string
		want   string
	}{
		{"an argument dropped", mutate("device_darwin.go", "c.msg3(enc, selSetBuffer, mb.id, uintptr(a.Offset), uintptr(a.Index))", "c.msg3(enc, selSetBuffer, mb.id, uintptr(a.Index))"),
			objcPrototypes, "setBuffer:offset:atIndex:: 2 arguments, the sender takes 3"},
		{"the wrong sender", mutate("device_darwin.go", "c.msg2(enc, selSetBufferOffset, uintptr(a.Offset), uintptr(a.Index))", "c.msg3(enc, selSetBufferOffset, uintptr(a.Offset), uintptr(a.Index), 0)"),
			objcPrototypes, "setBufferOffset:atIndex: (msg2) sent with msg3"},
		{"a selector registered with the wrong signature", mutate("device_selectors.go", `defMsg3("setBuffer:offset:atIndex:"`, `defMsgPtr3("setBuffer:offset:atIndex:"`),
			objcPrototypes, "selector setBuffer:offset:atIndex:: argument 1 is id<MTLBuffer> (id, a word register) but sender msgPtr3 passes a ptr"},
		{"the struct array instead of one MTLSize", mutate("device_darwin.go", "unsafe.Pointer(&b.sizes[0])", "unsafe.Pointer(&b.sizes)"),
			objcPrototypes, "field sizes points at a *ast.ArrayType, not a named struct"},
		{"BOOL unmasked", mutate("device_darwin.go", "c.msg1(obj, selRespondsToSelector, s.sel)&0xff != 0", "c.msg1(obj, selRespondsToSelector, s.sel) != 0"),
			objcPrototypes, "respondsToSelector: returns BOOL: mask the result with &0xff"},
		{"a void result used", mutate("device_darwin.go", "c.msg0(b.objs.cb, selCommit)", "_ = c.msg0(b.objs.cb, selCommit)"),
			objcPrototypes, "commit returns void; its result is used"},
		{"a header with one more argument", files,
			protoWith("setBytes:length:atIndex:", "- (void)setBytes:(const void *)bytes length:(NSUInteger)length atIndex:(NSUInteger)index;x"),
			"prototype of setBytes:length:atIndex:"},
		{"MTLSize by value in the header, a word in the table", files,
			protoWith("setComputePipelineState:", "- (void)setComputePipelineState:(MTLSize)state;"),
			"selector setComputePipelineState:: argument 1 is MTLSize (struct 24, a ptr register) but sender msg1 passes a word"},
		{"a 16-byte struct", files,
			protoWith("setComputePipelineState:", "- (void)setComputePipelineState:(NSRange)range;"),
			"a 16-byte struct is passed in registers"},
		{"a double result", files,
			protoWith("status", "- (CFTimeInterval)status;"),
			"a float 8 result does not come back in x0"},
		{"a misspelt selector", files,
			protoWith("endEncoding", "- (void)endEncodng;"),
			"prototype of endEncoding declares endEncodng"},
		{"a selector without prototype", files,
			func() map[string]string {
				out := protoWith("x", "- (void)x;")
				delete(out, "contents")
				return out
			}(), "selector contents (selContents) has no prototype"},
	} {
		errs := checkSendSites(c.files, c.protos)
		found := false
		for _, e := range errs {
			if strings.Contains(e, c.want) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: want an error containing %q, got %q", c.name, c.want, errs)
		}
	}
}

// FuzzObjCDecl: the prototype parser never panics, and what it accepts names a
// selector of the form the table requires.
func FuzzObjCDecl(f *testing.F) {
	for _, p := range objcPrototypes {
		f.Add(p)
	}
	f.Add("- (void)x:(void (^)(void *p, NSUInteger n))y;")
	f.Add("- (")
	f.Add("+ (id)a:(int)b c:(")
	f.Fuzz(func(t *testing.T, decl string) {
		d, err := parseObjCDecl(decl)
		if err != nil {
			return
		}
		if strings.Count(d.sel, ":") != len(d.args) || (!devSelPlainRE.MatchString(d.sel) && !devSelArgsRE.MatchString(d.sel)) {
			t.Fatalf("%q parsed as selector %q with %d arguments", decl, d.sel, len(d.args))
		}
	})
}
