package engine

import (
	"fmt"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/internal/gpu"
)

// Kept passes and Rewind (backend.Rewinder). The attention layers rewind by their
// length alone: a KV row past the new length is overwritten by the next token there. A
// GDN layer's state cannot be run backwards, so a kept pass keeps what rebuilds it at
// any of its positions, as the CPU backend does (qwen35.GDNKeep): the GDN states as
// they were before the pass, and per kept row and GDN layer the recurrence's inputs —
// the raw attn_qkv row and the normed row h (alpha and beta are its products) that
// gdn_seq reads. Rewind(n) restores the saved states and replays the first n − start
// rows of each layer through gdn_seq. A kept segment runs its GDN in that same step
// form (gdn_seq, never gdn_chunk or the fused gdn_decode), and gdn_seq goes token by
// token whatever the dispatch's row count, so the replay leaves the state the pass held
// at n bit for bit.
//
// Both copies are made on the device, inside the command buffers that compute what
// they copy, by the copy_f32 kernel:
//   - the rows must be: the next layer's products overwrite qkv and h within the same
//     command buffer, and cutting it at every GDN layer for a host copy would cost a
//     wait per layer (48 at the 27B);
//   - the save of the states could be a host copy through Contents() between command
//     buffers (they are shared buffers), but it is large — at the 27B's widths 48 GDN
//     layers × (48 heads × 128² + 3 × 10,240) floats, 151 MiB — which the GPU copies at
//     its bandwidth in the pass's first command buffer (≈0.8 ms read and written at
//     400 GB/s) while the host would copy it at a CPU core's ~10–20 GB/s (≈10 ms)
//     with the GPU idle. Rewind restores it the same way, in the command buffer of its
//     replay.
//
// A kept row costs, per GDN layer, QKV + E floats (61 KB at the 27B, 2.9 MB over its 48
// layers); the row buffers keep the largest pass seen, grown on demand.

// keeper is a state's kept pass.
type keeper struct {
	on    bool // the state's last call was kept, with no Reset, SetLen or CopyFrom since
	ended bool // a Rewind ended the pass (the next kept call starts a new one)
	from  int  // the state's length before the pass

	rows            int        // rows per GDN layer the row buffers hold
	ssm, conv       gpu.Buffer // the GDN states before the pass (ssmBuf's and convBuf's copies)
	qkv, h          gpu.Buffer // per GDN layer, rows × QKV and rows × E floats: the kept rows
	reserved        int64      // bytes of the working set counted for those four buffers
	layerIdx, gdnOf []int      // gdnOf[li]: layer li's index among the GDN layers (-1: attention)
}

var _ backend.Rewinder = (*state)(nil)

// startKeep begins a call of st with n tokens: a kept call continues the state's kept
// pass when its last call was kept and no Rewind ended it, or starts a new one at the
// state's length; a call that is not kept ends the keeping. It makes room for the
// pass's rows before anything runs.
func (e *engine) startKeep(st *state, keep bool, n int) error {
	k := &st.kp
	if !keep {
		k.on = false
		return nil
	}
	if !k.on || k.ended {
		k.on, k.ended, k.from = true, false, st.pos
	}
	if err := e.keepRoom(st, st.pos-k.from+n); err != nil {
		k.on = false
		return err
	}
	return nil
}

// keepRoom makes the row buffers hold rows rows per GDN layer, keeping the rows
// already kept (st.pos − from), and allocates the saved states at the first kept pass.
func (e *engine) keepRoom(st *state, rows int) error {
	k := &st.kp
	if k.ssm != nil && rows <= k.rows {
		return nil
	}
	s := &e.sizes
	QKV, E := e.cfg.QKVWidth(), e.cfg.Embedding
	newRows := max(rows, 2*k.rows, 8)
	sizes := []int{4 * s.gdnLayers * newRows * QKV, 4 * s.gdnLayers * newRows * E}
	if k.ssm == nil {
		sizes = append(sizes, st.ssmBuf.Len(), st.convBuf.Len())
	}
	var need int64
	for _, n := range sizes {
		need += int64(max(n, 16))
	}
	if err := e.reserveKeep(need, rows); err != nil {
		return err
	}
	got := make([]gpu.Buffer, len(sizes))
	for i, n := range sizes {
		b, err := e.dev.NewBuffer(max(n, 16))
		if err != nil {
			for _, b := range got[:i] {
				b.Release()
			}
			e.unreserve(need)
			return fmt.Errorf("keeping a pass of %d tokens: %w", rows, err)
		}
		got[i] = b
	}
	k.reserved += need
	qkv, h := got[0], got[1]
	if k.ssm == nil {
		k.ssm, k.conv = got[2], got[3]
	}
	if k.qkv != nil {
		// The rows kept so far, layer by layer into the wider layout; then the old
		// buffers go, and their bytes leave the reservation.
		held := st.pos - k.from
		for g := range s.gdnLayers {
			copy(qkv.Contents()[4*g*newRows*QKV:], k.qkv.Contents()[4*g*k.rows*QKV:4*(g*k.rows+held)*QKV])
			copy(h.Contents()[4*g*newRows*E:], k.h.Contents()[4*g*k.rows*E:4*(g*k.rows+held)*E])
		}
		old := int64(k.qkv.Len() + k.h.Len())
		k.qkv.Release()
		k.h.Release()
		e.unreserve(old)
		k.reserved -= old
	}
	k.qkv, k.h, k.rows = qkv, h, newRows
	if k.gdnOf == nil {
		k.gdnOf = make([]int, len(st.ssm))
		g := 0
		for li := range k.gdnOf {
			k.gdnOf[li] = -1
			if st.kc[li] == nil {
				k.gdnOf[li] = g
				k.layerIdx = append(k.layerIdx, li)
				g++
			}
		}
	}
	return nil
}

// bytes returns the memory the kept pass's buffers hold.
func (k *keeper) bytes() int64 {
	var n int64
	for _, b := range []gpu.Buffer{k.ssm, k.conv, k.qkv, k.h} {
		if b != nil {
			n += int64(b.Len())
		}
	}
	return n
}

// reserveKeep counts need bytes of a kept pass against the device's working set.
func (e *engine) reserveKeep(need int64, rows int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return backend.ErrClosed
	}
	ws := e.workingSet()
	if ws > 0 && e.resident+need > ws {
		return fmt.Errorf("%w: %d kept tokens need %s more, %s are left", ErrWorkingSet, rows, gib(need), gib(max(ws-e.resident, 0)))
	}
	e.resident += need
	return nil
}

// releaseKeep frees the kept pass's buffers and their reservation.
func (st *state) releaseKeep() {
	k := &st.kp
	for _, b := range []gpu.Buffer{k.ssm, k.conv, k.qkv, k.h} {
		if b != nil {
			b.Release()
		}
	}
	st.e.unreserve(k.reserved)
	*k = keeper{}
}

// keepSave records the save of st's GDN states when its rows in the command buffer
// are the first of a kept pass.
func (e *engine) keepSave(cb gpu.CommandBuffer, st *state) {
	k := &st.kp
	if !k.on || st.pos != k.from {
		return
	}
	e.copyFloats(cb, r0(st.ssmBuf), r0(k.ssm), st.ssmBuf.Len()/4)
	e.copyFloats(cb, r0(st.convBuf), r0(k.conv), st.convBuf.Len()/4)
}

// keepRows records the copy of s's qkv and h rows at GDN layer li into the state's
// kept rows, after those of the pass's earlier command buffers.
func (e *engine) keepRows(cb gpu.CommandBuffer, s seg, li int) {
	k := &s.st.kp
	QKV, E := e.cfg.QKVWidth(), e.cfg.Embedding
	at := k.gdnOf[li]*k.rows + s.st.pos - k.from
	e.copyFloats(cb, rowAt(s.a.qkv, s.row, QKV), rowAt(k.qkv, at, QKV), s.n*QKV)
	e.copyFloats(cb, rowAt(s.a.h, s.row, E), rowAt(k.h, at, E), s.n*E)
}

// copyGroups is the most threadgroups a copy spreads over: enough to fill any GPU,
// few enough for every device's grid limit.
const copyGroups = 1024

// copyFloats records the copy of n floats from src to dst.
func (e *engine) copyFloats(cb gpu.CommandBuffer, src, dst ref, n int) {
	e.copyFloatsGroups(cb, src, dst, n, min(ceilDiv(n, 256), copyGroups))
}

// copyFloatsGroups is copyFloats over groups threadgroups.
func (e *engine) copyFloatsGroups(cb gpu.CommandBuffer, src, dst ref, n, groups int) {
	if n == 0 {
		return
	}
	p := e.p[kCopy]
	charge(cb, rowsCost(1, n, 2))
	cb.Dispatch(p, gpu.Size{groups, 1, 1}, gpu.Size{threads(p, 256), 1, 1},
		bytesArg(args{uint32(n), uint32(groups), 0, 0}), src.arg(1), dst.arg(2))
}

// Rewind takes the state back to n tokens within its last kept pass
// (backend.Rewinder): the GDN states restored to those before the pass and its first
// n − start rows replayed through gdn_seq, in one command buffer, and the length set.
func (st *state) Rewind(n int) error {
	if st.closed {
		return backend.ErrClosed
	}
	k := &st.kp
	if !k.on {
		return fmt.Errorf("%w: rewind to %d tokens with no kept pass", backend.ErrNotKept, n)
	}
	if n < k.from || n > st.pos {
		return fmt.Errorf("%w: rewind to %d tokens, the kept pass covers %d to %d", backend.ErrNotKept, n, k.from, st.pos)
	}
	if n == st.pos {
		k.ended = true
		return nil
	}
	if err := st.e.replay(st, n-k.from); err != nil {
		return err
	}
	k.ended = true
	st.setLen(n)
	return nil
}

// replay restores st's GDN states to those before its kept pass and replays the pass's
// first j rows, in chunks of the state's activation rows (gdn_seq writes its output
// rows, which the replay discards, into the state's mix rows).
func (e *engine) replay(st *state, j int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return backend.ErrClosed
	}
	k := &st.kp
	c := e.cfg
	QKV, E := c.QKVWidth(), c.Embedding
	cb := e.splitter(1)
	e.copyFloats(cb, r0(k.ssm), r0(st.ssmBuf), st.ssmBuf.Len()/4)
	e.copyFloats(cb, r0(k.conv), r0(st.convBuf), st.convBuf.Len()/4)
	for g, li := range k.layerIdx {
		for r := 0; r < j; r += st.chunk {
			T := min(st.chunk, j-r)
			charge(cb, e.gdnCost(T))
			qkv := rowAt(k.qkv, g*k.rows+r, QKV)
			// z only gates the output, which is discarded: its rows are bound at the
			// qkv rows (QKV ≥ the inner width), in bounds.
			e.gdnCoreAt(cb, kGDNSeq, st, li, c.KHeads, T, qkv, qkv, rowAt(k.h, g*k.rows+r, E), r0(st.mix))
		}
	}
	cb.Commit()
	if err := cb.Wait(); err != nil {
		return e.commandBufferError(err, j, st.pos, cb)
	}
	return nil
}
