package openai

import "github.com/bonsai-go/sdk/internal/sse"

// sendError writes an error event in OpenAI's shape; the stream ends without [DONE].
func sendError(ev *sse.Writer, e *apiError) {
	ev.Send("", struct {
		Error *apiError `json:"error"`
	}{e})
}
