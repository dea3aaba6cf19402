package main

import (
	_ "embed"
	"net/http"
)

// page is the chat page served at /: one file, its style and script inline, nothing
// fetched from elsewhere. It keeps the conversation itself and talks to
// /v1/chat/completions, streaming. When the server answers 401 it asks for the API key,
// keeps it for the tab (sessionStorage) and sends it as a bearer token. Under each
// reply it says, in words, why the reply ended (its finish reason, max_tokens named
// when cut there) and its usage, from the stream's last chunk
// (stream_options.include_usage), with the decode rate and the time to the first token
// the page measures: the server sends no timings.
//
//go:embed page.html
var page []byte

func servePage(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	// Nothing from elsewhere, enforced: the page may only reach this server.
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'")
	h.Set("X-Content-Type-Options", "nosniff")
	w.Write(page)
}
