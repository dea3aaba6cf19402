package openai

import (
	"container/list"
	"sync"

	"github.com/bonsai-go/sdk/bonsai"
)

// Default bounds of the stored responses (Config.StoredResponses and
// Config.StoredResponseBytes).
const (
	DefaultStoredResponses     = 1024
	DefaultStoredResponseBytes = 64 << 20
)

// responseStore keeps the stored responses for GET /v1/responses/{id} and
// previous_response_id, the least recently used dropped first once there are more than
// maxCount of them or they weigh more than maxBytes. A response is kept with its
// conversation (without the instructions, which a follow-up does not inherit), the
// messages a follow-up's prompt starts with.
type responseStore struct {
	maxCount int
	maxBytes int64

	mu    sync.Mutex
	order *list.List // of *storedResponse, most recently used first
	byID  map[string]*list.Element
	bytes int64
}

type storedResponse struct {
	id   string
	body []byte // the response's JSON
	conv []bonsai.Message
	size int64
}

func newResponseStore(maxCount int, maxBytes int64) *responseStore {
	return &responseStore{maxCount: maxCount, maxBytes: maxBytes, order: list.New(), byID: map[string]*list.Element{}}
}

// off reports whether the store keeps nothing (Config.StoredResponses negative).
func (st *responseStore) off() bool { return st.maxCount <= 0 || st.maxBytes <= 0 }

// messageSize is about what a message holds in memory.
func messageSize(m bonsai.Message) int64 {
	n := len(m.Role) + len(m.Content) + len(m.ReasoningContent) + len(m.ToolCallID) + len(m.Name) + 64
	for _, c := range m.ToolCalls {
		n += len(c.ID) + len(c.Name) + len(c.Arguments) + 32
	}
	return int64(n)
}

// put stores a response; one larger than the whole store is not kept.
func (st *responseStore) put(id string, body []byte, conv []bonsai.Message) {
	size := int64(len(body) + len(id))
	for _, m := range conv {
		size += messageSize(m)
	}
	if st.maxCount <= 0 || size > st.maxBytes {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if e, ok := st.byID[id]; ok {
		st.drop(e)
	}
	st.byID[id] = st.order.PushFront(&storedResponse{id: id, body: body, conv: conv, size: size})
	st.bytes += size
	for st.order.Len() > st.maxCount || st.bytes > st.maxBytes {
		st.drop(st.order.Back())
	}
}

func (st *responseStore) drop(e *list.Element) {
	r := st.order.Remove(e).(*storedResponse)
	delete(st.byID, r.id)
	st.bytes -= r.size
}

func (st *responseStore) get(id string) (*storedResponse, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	e, ok := st.byID[id]
	if !ok {
		return nil, false
	}
	st.order.MoveToFront(e)
	return e.Value.(*storedResponse), true
}

// conversation returns a stored response's conversation, a copy the caller may extend.
func (st *responseStore) conversation(id string) ([]bonsai.Message, bool) {
	r, ok := st.get(id)
	if !ok {
		return nil, false
	}
	return append([]bonsai.Message(nil), r.conv...), true
}

// response returns a stored response's JSON.
func (st *responseStore) response(id string) ([]byte, bool) {
	r, ok := st.get(id)
	if !ok {
		return nil, false
	}
	return r.body, true
}

// remove deletes a stored response, reporting whether there was one.
func (st *responseStore) remove(id string) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	e, ok := st.byID[id]
	if ok {
		st.drop(e)
	}
	return ok
}
