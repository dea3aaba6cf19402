package gpu

import (
	"strings"
	"testing"
)

func TestCheckNoCopy(t *testing.T) {
	const page, max = 16384, 1 << 29
	if err := CheckNoCopy(4*page, 2*page, page, max); err != nil {
		t.Error(err)
	}
	for _, c := range []struct {
		addr uintptr
		n    int
		want string
	}{
		{4 * page, 0, "empty"},
		{4*page + 4096, page, "not aligned"},
		{4 * page, page + 1, "not a multiple"},
		{4 * page, 2 * max, "maximum"},
	} {
		err := CheckNoCopy(c.addr, c.n, page, max)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CheckNoCopy(%#x, %d) = %v; want %q", c.addr, c.n, err, c.want)
		}
	}
}

func TestCheckSizes(t *testing.T) {
	if err := CheckSizes("k", Size{4, 1, 1}, Size{32, 4, 2}, 256); err != nil {
		t.Error(err)
	}
	for _, c := range [][2]Size{
		{{0, 1, 1}, {1, 1, 1}},
		{{1, -1, 1}, {1, 1, 1}},
		{{1, 1, 1}, {1, 0, 1}},
		{{1, 1, 1}, {64, 4, 2}},
		{{1 << 32, 1, 1}, {1, 1, 1}},
	} {
		if err := CheckSizes("k", c[0], c[1], 256); err == nil {
			t.Errorf("CheckSizes(%v, %v) accepted", c[0], c[1])
		}
	}
}

type fakeBuffer int

func (b fakeBuffer) Len() int         { return int(b) }
func (b fakeBuffer) Contents() []byte { return make([]byte, b) }
func (b fakeBuffer) Release()         {}

func TestCheckArg(t *testing.T) {
	good := []struct {
		a  Arg
		tg int
	}{
		{Arg{Index: 0, Buf: fakeBuffer(64)}, 0},
		{Arg{Index: 30, Buf: fakeBuffer(64), Offset: 64}, 0},
		{Arg{Index: 3, Bytes: make([]byte, 4096)}, 0},
		{Arg{Index: 0, Threadgroup: 1}, 16},
		{Arg{Index: 1, Threadgroup: 4096}, 4096},
		{Arg{Index: 1, Threadgroup: 4100}, 4112},
	}
	for _, c := range good {
		tg, err := CheckArg("k", c.a)
		if err != nil || tg != c.tg {
			t.Errorf("CheckArg(%+v) = %d, %v; want %d", c.a, tg, err, c.tg)
		}
	}
	for _, a := range []Arg{
		{Index: -1, Buf: fakeBuffer(4)},
		{Index: 31, Buf: fakeBuffer(4)},
		{Index: 0},
		{Index: 0, Buf: fakeBuffer(4), Bytes: []byte{1}},
		{Index: 0, Buf: fakeBuffer(4), Threadgroup: 16},
		{Index: 0, Buf: fakeBuffer(4), Offset: 5},
		{Index: 0, Buf: fakeBuffer(4), Offset: -1},
		{Index: 0, Bytes: []byte{}},
		{Index: 0, Bytes: make([]byte, 4097)},
		{Index: 0, Bytes: []byte{1}, Offset: 1},
		{Index: 0, Threadgroup: -16},
		{Index: 0, Threadgroup: 16, Offset: 4},
	} {
		if _, err := CheckArg("k", a); err == nil {
			t.Errorf("CheckArg(%+v) accepted", a)
		}
	}
}
