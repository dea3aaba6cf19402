// Package hubtest is a stand-in for the Hugging Face Hub's file protocol, for tests: a
// "Hub" server answering HEAD and GET on /{repo}/resolve/{revision}/{file} with the
// Hub's headers (X-Repo-Commit; for LFS files a 302 to a "CDN" server, another
// httptest server, with X-Linked-Etag and X-Linked-Size; ETag and Content-Length for
// the others; X-Error-Code on errors), and faults to inject: a connection dropped
// mid-body, a stalled body, a corrupt byte, a server ignoring Range.
package hubtest

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// File is a file of a repository.
type File struct {
	Path string
	Data []byte
	LFS  bool // stored in LFS: served by the CDN, its etag the sha256
	// DirectHEAD answers the HEAD of an LFS file with 200 and its X-Linked headers
	// rather than the 302 (as a mirror may), so that the GET is what the Hub
	// redirects to the CDN.
	DirectHEAD bool
}

// Repo is a repository with one commit, which "main" names.
type Repo struct {
	ID     string // ORG/NAME
	Commit string // 40 hex digits
	Token  string // gated: the token the Hub requires ("" for a public repository)
	// Branches are further names of the commit, beside "main" (e.g. "refs/pr/1").
	Branches []string
	Files    []File
}

// Fault is what the CDN does wrong on the next GETs.
type Fault struct {
	Times     int   // how many GETs it applies to (0: none)
	DropAfter int64 // close the connection after this many bytes of the body
	Stall     bool  // after DropAfter bytes, wait until the client goes away
	Corrupt   bool  // serve the file with one byte flipped
	Status    int   // answer with this status and no body
	// IgnoreRange answers a Range request with the whole file (200).
	IgnoreRange bool
}

// Request is a request either server received.
type Request struct {
	Server        string // "hub" or "cdn"
	Method, Path  string
	RawPath       string // as escaped on the wire
	Authorization string
	Range         string
}

// Server is the stand-in: Hub is the endpoint (HF_ENDPOINT), CDN where LFS files are.
type Server struct {
	Hub, CDN *httptest.Server

	mu      sync.Mutex
	repos   map[string]*Repo
	renamed map[string]string
	fault   Fault
	log     []Request
}

// New starts the two servers; they close when the test ends.
func New(t testing.TB) *Server {
	s := &Server{repos: map[string]*Repo{}, renamed: map[string]string{}}
	s.Hub = httptest.NewServer(http.HandlerFunc(s.hub))
	s.CDN = httptest.NewServer(http.HandlerFunc(s.cdn))
	t.Cleanup(func() {
		s.Hub.Close()
		s.CDN.Close()
	})
	return s
}

// Add adds (or replaces) a repository.
func (s *Server) Add(r Repo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.repos[r.ID] = &r
}

// Rename makes the Hub redirect old's URLs to new's with a relative Location, as it
// does for a renamed repository.
func (s *Server) Rename(old, new string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.renamed[old] = new
}

// SetFault sets what the CDN does wrong.
func (s *Server) SetFault(f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fault = f
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.log...)
}

// Count counts the requests of method to server ("hub" or "cdn"; "" for both).
func (s *Server) Count(server, method string) int {
	n := 0
	for _, r := range s.Requests() {
		if (server == "" || r.Server == server) && r.Method == method {
			n++
		}
	}
	return n
}

// SHA256 is an LFS file's etag.
func SHA256(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}

// GitSHA1 is a git blob's id, the etag of a file not in LFS.
func GitSHA1(data []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(data))
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

func (s *Server) record(server string, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, Request{server, r.Method, r.URL.Path, r.URL.EscapedPath(), r.Header.Get("Authorization"), r.Header.Get("Range")})
}

func hubError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("X-Error-Code", code)
	w.Header().Set("X-Error-Message", msg)
	http.Error(w, msg, status)
}

// hub serves /{org}/{name}/resolve/{revision}/{file...}.
func (s *Server) hub(w http.ResponseWriter, r *http.Request) {
	s.record("hub", r)
	parts := strings.Split(strings.TrimPrefix(r.URL.EscapedPath(), "/"), "/")
	if len(parts) < 5 || parts[2] != "resolve" {
		http.NotFound(w, r)
		return
	}
	for i, p := range parts {
		u, err := url.PathUnescape(p)
		if err != nil {
			http.Error(w, "bad path", http.StatusBadRequest)
			return
		}
		parts[i] = u
	}
	id, rev, path := parts[0]+"/"+parts[1], parts[3], strings.Join(parts[4:], "/")
	s.mu.Lock()
	newID, renamed := s.renamed[id]
	repo := s.repos[id]
	s.mu.Unlock()
	if renamed {
		w.Header().Set("Location", "/"+newID+"/resolve/"+url.PathEscape(rev)+"/"+strings.Join(escapeAll(parts[4:]), "/"))
		w.WriteHeader(http.StatusTemporaryRedirect)
		return
	}
	if repo == nil {
		// The Hub answers 401 to an anonymous caller, not to give away what exists.
		hubError(w, http.StatusUnauthorized, "RepoNotFound", "Repository not found")
		return
	}
	if repo.Token != "" {
		switch r.Header.Get("Authorization") {
		case "Bearer " + repo.Token:
		case "":
			hubError(w, http.StatusUnauthorized, "GatedRepo", "Access to model "+id+" is restricted. You must have access to it and be authenticated to access it. Please log in.")
			return
		default:
			hubError(w, http.StatusForbidden, "GatedRepo", "Access to model "+id+" is restricted and you are not in the authorized list.")
			return
		}
	}
	if rev != "main" && rev != repo.Commit && !slices.Contains(repo.Branches, rev) {
		hubError(w, http.StatusNotFound, "RevisionNotFound", "Invalid rev id: "+rev)
		return
	}
	var f *File
	for i := range repo.Files {
		if repo.Files[i].Path == path {
			f = &repo.Files[i]
		}
	}
	if f == nil {
		hubError(w, http.StatusNotFound, "EntryNotFound", "Entry not found")
		return
	}
	w.Header().Set("X-Repo-Commit", repo.Commit)
	if !f.LFS {
		w.Header().Set("ETag", `"`+GitSHA1(f.Data)+`"`)
		w.Header().Set("Content-Length", strconv.Itoa(len(f.Data)))
		if r.Method == http.MethodGet {
			w.Write(f.Data)
		}
		return
	}
	sum := SHA256(f.Data)
	w.Header().Set("X-Linked-Etag", `"`+sum+`"`)
	w.Header().Set("X-Linked-Size", strconv.Itoa(len(f.Data)))
	w.Header().Set("ETag", `W/"`+GitSHA1([]byte("version https://git-lfs.github.com/spec/v1\noid sha256:"+sum+"\n"))+`"`)
	loc := s.CDN.URL + "/repos/" + sum[:2] + "/" + sum + "?response-content-disposition=attachment&X-Amz-Signature=0123"
	if f.DirectHEAD && r.Method == http.MethodHead {
		w.Header().Set("Content-Length", strconv.Itoa(len(f.Data)))
		return
	}
	w.Header().Set("Location", loc)
	w.WriteHeader(http.StatusFound)
	fmt.Fprintf(w, "Found. Redirecting to %s", loc)
}

func escapeAll(parts []string) []string {
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = url.PathEscape(p)
	}
	return out
}

// cdn serves /repos/xx/{sha256} with Range, and the fault.
func (s *Server) cdn(w http.ResponseWriter, r *http.Request) {
	s.record("cdn", r)
	sum := r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
	s.mu.Lock()
	var data []byte
	for _, repo := range s.repos {
		for _, f := range repo.Files {
			if f.LFS && SHA256(f.Data) == sum {
				data = f.Data
			}
		}
	}
	fault := Fault{}
	if s.fault.Times > 0 && r.Method == http.MethodGet {
		fault = s.fault
		s.fault.Times--
	}
	s.mu.Unlock()
	if data == nil {
		http.NotFound(w, r)
		return
	}
	if fault.Status != 0 {
		http.Error(w, http.StatusText(fault.Status), fault.Status)
		return
	}
	if fault.Corrupt {
		data = append([]byte(nil), data...)
		data[len(data)/2] ^= 0x01
	}
	from := int64(0)
	status := http.StatusOK
	if rg := r.Header.Get("Range"); rg != "" && !fault.IgnoreRange {
		n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(rg, "bytes="), "-"), 10, 64)
		if err != nil || !strings.HasPrefix(rg, "bytes=") || !strings.HasSuffix(rg, "-") {
			http.Error(w, "unsupported range", http.StatusBadRequest)
			return
		}
		if n >= int64(len(data)) {
			w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", len(data)))
			w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
			return
		}
		from, status = n, http.StatusPartialContent
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", n, len(data)-1, len(data)))
	}
	body := data[from:]
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.Header().Set("Accept-Ranges", "bytes")
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return
	}
	if fault.Times > 0 && (fault.DropAfter > 0 || fault.Stall) && fault.DropAfter < int64(len(body)) {
		w.Write(body[:fault.DropAfter])
		w.(http.Flusher).Flush()
		if fault.Stall {
			<-r.Context().Done()
		}
		panic(http.ErrAbortHandler) // closes the connection mid-body
	}
	w.Write(body)
}
