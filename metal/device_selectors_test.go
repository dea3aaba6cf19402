package metal

import (
	"regexp"
	"strings"
	"testing"
)

// The selector table is the one place a typo would crash a Mac (an unrecognised
// selector is an uncaught Objective-C exception) or, worse, call through the wrong C
// signature. These checks need no Mac.

var (
	devSelPlainRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	devSelArgsRE  = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*:)+$`)
	devRecvRE     = regexp.MustCompile(`^(\+?[A-Z][A-Za-z0-9]*|<[A-Z][A-Za-z0-9]*>)$`)
)

// devSigArity is the number of arguments (after self and _cmd) of each C signature, as the
// typed senders in device_darwin.go take them.
var devSigArity = map[string]int{
	"msg0": 0, "msgPtr0": 0,
	"msg1": 1, "msgRef1": 1,
	"msg2": 2, "msgErr2": 2, "msgRefRef2": 2,
	"msg3": 3, "msgErr3": 3, "msgPtr3": 3,
	"msgPtr4": 4,
}

func TestDeviceSelectorTable(t *testing.T) {
	if len(objcSelectors) < 40 {
		t.Fatalf("only %d selectors registered", len(objcSelectors))
	}
	seen := map[string]*objcSel{}
	for _, s := range objcSelectors {
		colons := strings.Count(s.name, ":")
		switch {
		case colons == 0 && !devSelPlainRE.MatchString(s.name),
			colons > 0 && !devSelArgsRE.MatchString(s.name):
			t.Errorf("selector %q is not well-formed", s.name)
		}
		if s.args != colons {
			t.Errorf("selector %q has %d colons but is declared with %d arguments (signature %s)", s.name, colons, s.args, s.sig)
		}
		if n, ok := devSigArity[s.sig]; !ok {
			t.Errorf("selector %q: unknown signature %q", s.name, s.sig)
		} else if n != colons {
			t.Errorf("selector %q: signature %s takes %d arguments, the selector %d", s.name, s.sig, n, colons)
		}
		if !devRecvRE.MatchString(s.recv) {
			t.Errorf("selector %q: receiver %q is not +Class, Class or <Protocol>", s.name, s.recv)
		}
		if prev := seen[s.name]; prev != nil {
			t.Errorf("selector %q declared twice (%s, %s)", s.name, prev.sig, s.sig)
		}
		seen[s.name] = s
	}
	// The hot-path calls use the signatures the darwin code was written for.
	for name, sig := range map[string]string{
		"dispatchThreadgroups:threadsPerThreadgroup:":          "msgRefRef2",
		"setBuffer:offset:atIndex:":                            "msg3",
		"setBytes:length:atIndex:":                             "msgPtr3",
		"setThreadgroupMemoryLength:atIndex:":                  "msg2",
		"setComputePipelineState:":                             "msg1",
		"newBufferWithBytesNoCopy:length:options:deallocator:": "msgPtr4",
		"newLibraryWithSource:options:error:":                  "msgErr3",
		"newComputePipelineStateWithFunction:error:":           "msgErr2",
		"isOperatingSystemAtLeastVersion:":                     "msgRef1",
		"contents":                                             "msgPtr0",
		"UTF8String":                                           "msgPtr0",
	} {
		if s := seen[name]; s == nil || s.sig != sig {
			t.Errorf("selector %q: want signature %s, have %+v", name, sig, s)
		}
	}
}

func TestDeviceClassTable(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range objcClasses {
		if !devSelPlainRE.MatchString(c.name) || seen[c.name] {
			t.Errorf("class %q is malformed or repeated", c.name)
		}
		seen[c.name] = true
	}
	// Every +Class receiver of a class method is a class the device resolves.
	for _, s := range objcSelectors {
		if cls, ok := strings.CutPrefix(s.recv, "+"); ok && cls != "NSObject" && !seen[cls] {
			t.Errorf("selector %q is sent to class %s, which is not in the class table", s.name, cls)
		}
	}
}
