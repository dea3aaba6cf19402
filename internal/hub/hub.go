// Package hub downloads files from the Hugging Face Hub into huggingface_hub's cache,
// speaking the Hub's file protocol as huggingface_hub's hf_hub_download does: a HEAD of
// {endpoint}/{repo}/resolve/{revision}/{file} (following only relative redirects, those
// of a renamed repository) gives the commit (X-Repo-Commit), the blob's etag
// (X-Linked-Etag, the sha256 of an LFS file, else ETag) and its size (X-Linked-Size,
// else Content-Length), and the location to GET it from (a CDN, for LFS files).
//
// The cache is huggingface_hub's: {cache}/models--ORG--NAME/blobs/ETAG, the file as
// snapshots/COMMIT/FILE (a relative symbolic link to the blob) and refs/REVISION holding
// the commit, so that a file huggingface-cli downloaded is found here, and the other way
// round. A download goes to blobs/ETAG.incomplete under the lock file
// .locks/models--ORG--NAME/ETAG.lock (flock(2), the lock huggingface_hub's filelock takes
// on Unix), resumes with Range requests after a dropped connection and on the next
// call, and is checked against its sha256 (LFS files) before it becomes the blob.
//
// This package is internal: bonsai.Pull is its public face.
package hub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultEndpoint is the Hub's address, when HF_ENDPOINT is not set.
const DefaultEndpoint = "https://huggingface.co"

// Errors callers test with errors.Is.
var (
	// ErrAuth: the Hub answered 401 or 403: the repository is gated or private (or
	// does not exist, which the Hub does not tell an anonymous caller), or the token
	// was refused.
	ErrAuth = errors.New("the Hub needs a token with access to this repository")
	// ErrNotFound: the Hub has no such repository, revision or file.
	ErrNotFound = errors.New("not found on the Hub")
	// ErrChecksum: the downloaded bytes do not have the sha256 the Hub announced.
	ErrChecksum = errors.New("checksum mismatch")
	// ErrNotCached: offline (HF_HUB_OFFLINE, or the Hub could not be reached) and the
	// file is not in the cache.
	ErrNotCached = errors.New("not in the cache")
)

// Progress is a download's progress, in bytes.
type Progress struct {
	Done    int64 // bytes of the file on disk, Resumed included
	Total   int64 // the file's size
	Resumed int64 // bytes found from an earlier attempt or an earlier run
}

// Options are a download's settings. The zero value reads the environment as
// huggingface_hub does.
type Options struct {
	Revision string // branch, tag or commit; "" for main
	Endpoint string // "" for HF_ENDPOINT, else DefaultEndpoint
	Token    string // "" for HF_TOKEN, else the token file (HF_TOKEN_PATH, HF_HOME/token)
	CacheDir string // the hub cache; "" for HF_HUB_CACHE, else HF_HOME/hub
	Offline  bool   // use the cache only (also when HF_HUB_OFFLINE is true)
	Client   *http.Client
	Progress func(Progress) // called from the downloading goroutine
	// Retries is how many times in a row a download is resumed after an error with no
	// byte received in between (default 5, as huggingface_hub); Backoff is the first
	// wait between them, doubling (default 1 s).
	Retries int
	Backoff time.Duration
	// Stall is how long a request may go without a byte before it is dropped (and the
	// download resumed): the HEAD's whole answer, the GET's next chunk (default 30 s;
	// huggingface_hub's HF_HUB_DOWNLOAD_TIMEOUT is 10 s).
	Stall time.Duration
}

// env reads the environment variable of huggingface_hub's constants.
func env(name string) string { return strings.TrimSpace(os.Getenv(name)) }

// isTrue is huggingface_hub's _is_true: 1, ON, YES or TRUE, in any case.
func isTrue(v string) bool {
	switch strings.ToUpper(v) {
	case "1", "ON", "YES", "TRUE":
		return true
	}
	return false
}

// expand expands environment variables and a leading ~, as huggingface_hub's
// constants do (os.path.expandvars, os.path.expanduser).
func expand(path string) string {
	path = os.ExpandEnv(path)
	if rest, ok := strings.CutPrefix(path, "~"); ok && (rest == "" || os.IsPathSeparator(rest[0])) {
		if home, err := os.UserHomeDir(); err == nil {
			return home + rest
		}
	}
	return path
}

// Home is HF_HOME, or $XDG_CACHE_HOME/huggingface, or ~/.cache/huggingface.
func Home() (string, error) {
	if h := env("HF_HOME"); h != "" {
		return expand(h), nil
	}
	cache := env("XDG_CACHE_HOME")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("finding the Hugging Face cache: %w (set HF_HOME)", err)
		}
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "huggingface"), nil
}

// CacheDir is HF_HUB_CACHE (or the older HUGGINGFACE_HUB_CACHE), else HF_HOME/hub.
func CacheDir() (string, error) {
	for _, v := range []string{"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"} {
		if d := env(v); d != "" {
			return expand(d), nil
		}
	}
	home, err := Home()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, "hub"), nil
}

// Token is huggingface_hub's get_token: HF_TOKEN, else the older
// HUGGING_FACE_HUB_TOKEN, else the file `hf auth login` writes (HF_TOKEN_PATH, else
// HF_HOME/token); "" if none.
func Token() string {
	for _, v := range []string{"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"} {
		if t := env(v); t != "" {
			return t
		}
	}
	path := env("HF_TOKEN_PATH")
	if path == "" {
		home, err := Home()
		if err != nil {
			return ""
		}
		path = filepath.Join(home, "token")
	}
	b, err := os.ReadFile(expand(path))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// resolved are the options with the environment's defaults filled in.
type resolved struct {
	Options
	repo, file string
	storage    string // {cache}/models--ORG--NAME
}

func (o Options) resolve(repo, file string) (*resolved, error) {
	if err := CheckRepo(repo); err != nil {
		return nil, err
	}
	if err := CheckFile(file); err != nil {
		return nil, err
	}
	if o.Revision == "" {
		o.Revision = "main"
	}
	if err := CheckRevision(o.Revision); err != nil {
		return nil, err
	}
	if o.Endpoint == "" {
		o.Endpoint = env("HF_ENDPOINT")
	}
	if o.Endpoint == "" {
		o.Endpoint = DefaultEndpoint
	}
	o.Endpoint = strings.TrimRight(o.Endpoint, "/")
	if u, err := url.Parse(o.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("Hub endpoint %q is not an http(s) URL", o.Endpoint)
	}
	if o.Token == "" {
		o.Token = Token()
	}
	if o.CacheDir == "" {
		d, err := CacheDir()
		if err != nil {
			return nil, err
		}
		o.CacheDir = d
	}
	o.Offline = o.Offline || isTrue(env("HF_HUB_OFFLINE")) || isTrue(env("TRANSFORMERS_OFFLINE"))
	if o.Client == nil {
		o.Client = http.DefaultClient
	}
	if o.Retries <= 0 {
		o.Retries = 5
	}
	if o.Backoff <= 0 {
		o.Backoff = time.Second
	}
	if o.Stall <= 0 {
		o.Stall = 30 * time.Second
	}
	return &resolved{Options: o, repo: repo, file: file,
		storage: filepath.Join(o.CacheDir, "models--"+strings.ReplaceAll(repo, "/", "--"))}, nil
}

// commitHash is a full commit id, which names a snapshot without asking the Hub.
var commitHash = regexp.MustCompile(`^[0-9a-f]{40}$`)

// sha256Hex is an LFS file's etag: its sha256, which the download is checked against.
var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// pointer is the snapshot's path of the file at commit.
func (r *resolved) pointer(commit string) string {
	return filepath.Join(r.storage, "snapshots", commit, filepath.FromSlash(r.file))
}

// Download returns the path of repo's file at opts.Revision in the cache (the
// snapshot's link), downloading it first if it is not there. It fails with ErrAuth,
// ErrNotFound, ErrChecksum or ErrNotCached, wrapped in a message that names the file
// and what to do.
func Download(ctx context.Context, repo, file string, opts Options) (string, error) {
	r, err := opts.resolve(repo, file)
	if err != nil {
		return "", err
	}
	// A commit names its snapshot: no need to ask the Hub (hf_hub_download's shortcut).
	if commitHash.MatchString(r.Revision) {
		if p := r.pointer(r.Revision); exists(p) {
			return p, nil
		}
	}
	if r.Offline {
		if p, ok := r.cached(); ok {
			return p, nil
		}
		why := "offline"
		if !opts.Offline {
			why = "offline (HF_HUB_OFFLINE)"
		}
		return "", fmt.Errorf("%s: %s at revision %s: %s and %w %s", repo, file, r.Revision, why, ErrNotCached, r.CacheDir)
	}
	m, err := r.metadata(ctx)
	if err != nil {
		var ue *unreachableError
		if errors.As(err, &ue) {
			if p, ok := r.cached(); ok {
				return p, nil
			}
			return "", fmt.Errorf("%s: %s at revision %s: the Hub cannot be reached (%v) and the file is %w %s", repo, file, r.Revision, ue.err, ErrNotCached, r.CacheDir)
		}
		return "", err
	}
	pointer := r.pointer(m.commit)
	if r.Revision != m.commit {
		if err := r.writeRef(m.commit); err != nil {
			return "", err
		}
	}
	if exists(pointer) {
		return pointer, nil
	}
	blob := filepath.Join(r.storage, "blobs", m.etag)
	for _, d := range []string{filepath.Dir(blob), filepath.Dir(pointer)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", err
		}
	}
	tagCache(r.CacheDir)
	unlock, err := lock(ctx, filepath.Join(r.CacheDir, ".locks", filepath.Base(r.storage), m.etag+".lock"))
	if err != nil {
		return "", fmt.Errorf("locking the download of %s: %w", file, err)
	}
	defer unlock()
	if !exists(blob) { // another process may have finished it while we waited for the lock
		if err := r.fetch(ctx, m, blob); err != nil {
			return "", err
		}
	}
	if err := link(blob, pointer); err != nil {
		return "", err
	}
	return pointer, nil
}

// tagCache marks the cache for backup tools, as huggingface_hub does: a CACHEDIR.TAG
// (https://bford.info/cachedir/), if there is none. Best effort.
func tagCache(dir string) {
	path := filepath.Join(dir, "CACHEDIR.TAG")
	if _, err := os.Lstat(path); err == nil {
		return
	}
	os.WriteFile(path, []byte("Signature: 8a477f597d28d172789f06886806bc55\n"+
		"# This file is a cache directory tag created by the Bonsai Go SDK (huggingface_hub's cache).\n"+
		"# For information about cache directory tags, see:\n#\thttps://bford.info/cachedir/\n"), 0o644)
}

func exists(path string) bool {
	_, err := os.Stat(path) // follows the snapshot's link: a dangling one is not the file
	return err == nil
}

// cached is the snapshot of refs/REVISION (or of the commit the revision is), if the
// file is in it.
func (r *resolved) cached() (string, bool) {
	commit := r.Revision
	if !commitHash.MatchString(commit) {
		b, err := os.ReadFile(filepath.Join(r.storage, "refs", filepath.FromSlash(r.Revision)))
		if err != nil {
			return "", false
		}
		commit = strings.TrimSpace(string(b))
		if !commitHash.MatchString(commit) {
			return "", false
		}
	}
	p := r.pointer(commit)
	return p, exists(p)
}

// writeRef records that the revision is at commit, as huggingface_hub does.
func (r *resolved) writeRef(commit string) error {
	path := filepath.Join(r.storage, "refs", filepath.FromSlash(r.Revision))
	if b, err := os.ReadFile(path); err == nil && string(b) == commit {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(commit), 0o644)
}

// link makes pointer a symbolic link to blob, relative as huggingface_hub's
// _create_symlink makes it, so that the cache can move; where links are not allowed,
// a hard link.
func link(blob, pointer string) error {
	rel, err := filepath.Rel(filepath.Dir(pointer), blob)
	if err != nil {
		return err
	}
	os.Remove(pointer) // a dangling link left by an earlier, removed blob
	if err := os.Symlink(rel, pointer); err == nil {
		return nil
	}
	if err := os.Link(blob, pointer); err != nil {
		return fmt.Errorf("linking %s to its blob: %w", pointer, err)
	}
	return nil
}

// meta is what the HEAD says of the file.
type meta struct {
	commit, etag string
	size         int64
	location     string // where to GET it: the CDN's URL, or the resolve URL itself
}

// unreachableError is a HEAD that got no answer from the Hub (or a 5xx), after which
// the cache is looked at.
type unreachableError struct{ err error }

func (e *unreachableError) Error() string { return e.err.Error() }
func (e *unreachableError) Unwrap() error { return e.err }

// resolveURL is hf_hub_url's: the revision escaped whole (refs/pr/1 → refs%2Fpr%2F1),
// the file escaped part by part.
func (r *resolved) resolveURL() string {
	parts := strings.Split(r.file, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return r.Endpoint + "/" + r.repo + "/resolve/" + url.PathEscape(r.Revision) + "/" + strings.Join(parts, "/")
}

func (r *resolved) newRequest(ctx context.Context, method, u string, auth bool) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", "bonsai-go")
	if auth && r.Token != "" {
		req.Header.Set("Authorization", "Bearer "+r.Token)
	}
	return req, nil
}

// metadata is get_hf_file_metadata: HEAD, following relative redirects only (a renamed
// repository), not the CDN's, whose Location is where the file is then fetched from.
func (r *resolved) metadata(ctx context.Context) (*meta, error) {
	client := *r.Client
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	u := r.resolveURL()
	for hops := 0; ; hops++ {
		hctx, cancel := context.WithTimeout(ctx, r.Stall)
		req, err := r.newRequest(hctx, http.MethodHead, u, true)
		if err != nil {
			cancel()
			return nil, err
		}
		req.Header.Set("Accept-Encoding", "identity") // the real size, not a compressed one
		resp, err := client.Do(req)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, &unreachableError{err}
		}
		resp.Body.Close()
		if err := r.statusError(resp); err != nil {
			return nil, err
		}
		loc := resp.Header.Get("Location")
		if resp.StatusCode/100 == 3 && loc != "" {
			lu, err := url.Parse(loc)
			if err != nil {
				return nil, fmt.Errorf("%s: the Hub redirected to %q: %w", r.file, loc, err)
			}
			if lu.Host == "" { // relative: a renamed repository; ask again there
				if hops == 10 {
					return nil, fmt.Errorf("%s: more than 10 redirects", u)
				}
				u = resp.Request.URL.ResolveReference(&url.URL{Path: lu.Path, RawPath: lu.RawPath}).String()
				continue
			}
		}
		m := &meta{commit: resp.Header.Get("X-Repo-Commit"), location: u}
		if resp.StatusCode/100 == 3 && loc != "" {
			m.location = loc
		}
		m.etag = resp.Header.Get("X-Linked-Etag")
		if m.etag == "" {
			m.etag = resp.Header.Get("ETag")
		}
		m.etag = strings.Trim(strings.TrimPrefix(m.etag, "W/"), `"`)
		size := resp.Header.Get("X-Linked-Size")
		if size == "" && resp.StatusCode/100 != 3 {
			size = resp.Header.Get("Content-Length")
		}
		m.size, err = strconv.ParseInt(size, 10, 64)
		switch {
		case m.commit == "":
			return nil, fmt.Errorf("%s: %s: the Hub's answer has no X-Repo-Commit (is %s the Hub, or a proxy?)", r.repo, r.file, r.Endpoint)
		case m.etag == "" || strings.ContainsAny(m.etag, `/\`) || m.etag == "." || m.etag == "..":
			return nil, fmt.Errorf("%s: %s: the Hub's answer has no usable ETag (%q)", r.repo, r.file, m.etag)
		case err != nil || m.size < 0:
			return nil, fmt.Errorf("%s: %s: the Hub's answer has no size (X-Linked-Size %q)", r.repo, r.file, size)
		case !commitHash.MatchString(m.commit):
			return nil, fmt.Errorf("%s: %s: the Hub's X-Repo-Commit %q is not a commit id", r.repo, r.file, m.commit)
		}
		return m, nil
	}
}

// statusError turns the Hub's error statuses into errors that say what to do, reading
// its X-Error-Code as huggingface_hub's hf_raise_for_status does. 5xx are
// unreachableError (the cache is tried).
func (r *resolved) statusError(resp *http.Response) error {
	code := resp.Header.Get("X-Error-Code")
	what := fmt.Sprintf("%s: %s at revision %s", r.repo, r.file, r.Revision)
	switch {
	case resp.StatusCode < 400:
		return nil
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		how := "set HF_TOKEN to a token from " + r.Endpoint + "/settings/tokens (or log in with `hf auth login`)"
		if r.Token != "" {
			how = "the token sent (HF_TOKEN, or the token file) was refused or has no access: check it at " + r.Endpoint + "/settings/tokens"
		}
		return fmt.Errorf("%s: %s: %w: the repository is gated or private, or does not exist; "+
			"accept its terms at %s/%s if it is gated, and %s", what, resp.Status, ErrAuth, r.Endpoint, r.repo, how)
	case resp.StatusCode == http.StatusNotFound:
		switch code {
		case "RepoNotFound":
			return fmt.Errorf("%s: repository %s %w", what, r.repo, ErrNotFound)
		case "RevisionNotFound":
			return fmt.Errorf("%s: revision %s of %s %w", what, r.Revision, r.repo, ErrNotFound)
		}
		return fmt.Errorf("%s: file %s %w (in %s at %s)", what, r.file, ErrNotFound, r.repo, r.Revision)
	case resp.StatusCode >= 500:
		return &unreachableError{fmt.Errorf("the Hub answered %s", resp.Status)}
	}
	msg := resp.Header.Get("X-Error-Message")
	if msg != "" {
		msg = ": " + msg
	}
	return fmt.Errorf("%s: the Hub answered %s%s", what, resp.Status, msg)
}

// fetch downloads the blob into blob+".incomplete", resuming what is there, checks it
// and renames it into place. The caller holds the blob's lock.
func (r *resolved) fetch(ctx context.Context, m *meta, blob string) error {
	part := blob + ".incomplete"
	f, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	// The partial bytes of an earlier run are hashed once, so that the digest of the
	// whole file is ready when its last byte arrives.
	var h hash.Hash
	if sha256Hex.MatchString(m.etag) {
		h = sha256.New()
	}
	have, err := r.prefix(f, h, m.size)
	if err != nil {
		return fmt.Errorf("reading the partial download %s: %w", part, err)
	}
	resumed := have
	// The token goes only to the Hub's own host, never to the CDN it redirects to
	// (huggingface_hub drops it when the host differs); Go's client would forward it
	// to a subdomain or another port of the same host, so redirects are checked here.
	hubURL, _ := url.Parse(r.Endpoint)
	locURL, err := url.Parse(m.location)
	if err != nil {
		return fmt.Errorf("%s: the Hub's location %q: %w", r.file, m.location, err)
	}
	auth := locURL.Host == hubURL.Host
	client := *r.Client
	client.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return errors.New("more than 10 redirects")
		}
		if req.URL.Host != hubURL.Host {
			req.Header.Del("Authorization")
		}
		return nil
	}
	report := func() {
		if r.Progress != nil {
			r.Progress(Progress{Done: have, Total: m.size, Resumed: resumed})
		}
	}
	report()
	fails, wait := 0, r.Backoff
	buf := make([]byte, 1<<20)
	for have < m.size {
		got, err := r.get(ctx, &client, m, auth, f, h, &have, &resumed, buf, report)
		if err == nil {
			continue
		}
		if ctx.Err() != nil {
			return fmt.Errorf("downloading %s: %w", r.file, ctx.Err())
		}
		var fatal *fatalError
		if errors.As(err, &fatal) {
			return fatal.err
		}
		if got > 0 { // progress was made: the count of failures in a row starts again
			fails, wait = 0, r.Backoff
		}
		fails++
		if fails > r.Retries {
			return fmt.Errorf("downloading %s from %s: %w (gave up after %d tries; run again to resume from byte %d)", r.file, locURL.Host, err, fails, have)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("downloading %s: %w", r.file, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, 30*time.Second)
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if h != nil {
		if got := hex.EncodeToString(h.Sum(nil)); got != m.etag {
			f.Close()
			os.Remove(part)
			return fmt.Errorf("%s: %w: sha256 %s, the Hub says %s; the partial download was deleted, run again to download it anew", r.file, ErrChecksum, got, m.etag)
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(part, blob)
}

// prefix hashes the first bytes of a partial download into h and returns how many
// there are; a file longer than size is started again.
func (r *resolved) prefix(f *os.File, h hash.Hash, size int64) (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	have := st.Size()
	if have > size {
		return 0, restart(f, h)
	}
	if h != nil && have > 0 {
		if _, err := io.Copy(h, io.NewSectionReader(f, 0, have)); err != nil {
			return 0, err
		}
	}
	_, err = f.Seek(have, io.SeekStart)
	return have, err
}

// restart empties a partial download.
func restart(f *os.File, h hash.Hash) error {
	if h != nil {
		h.Reset()
	}
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.Seek(0, io.SeekStart)
	return err
}

// fatalError is an error no retry will mend.
type fatalError struct{ err error }

func (e *fatalError) Error() string { return e.err.Error() }

// get makes one GET from *have on, appending to f; it returns the bytes it got.
func (r *resolved) get(ctx context.Context, client *http.Client, m *meta, auth bool, f *os.File, h hash.Hash,
	have, resumed *int64, buf []byte, report func()) (int64, error) {
	// A watchdog drops the request when no byte has come for r.Stall, so that a stalled
	// connection is resumed on a new one rather than waited on for ever.
	gctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stalled := false
	var mu sync.Mutex
	watchdog := time.AfterFunc(r.Stall, func() {
		mu.Lock()
		stalled = true
		mu.Unlock()
		cancel()
	})
	defer watchdog.Stop()
	wasStalled := func(err error) error {
		mu.Lock()
		defer mu.Unlock()
		if stalled && ctx.Err() == nil {
			return fmt.Errorf("no data for %v: %w", r.Stall, err)
		}
		return err
	}
	req, err := r.newRequest(gctx, http.MethodGet, m.location, auth)
	if err != nil {
		return 0, &fatalError{err}
	}
	// Go's transport would ask for gzip and decompress it behind our back, and the
	// sizes and ranges are of the file as stored.
	req.Header.Set("Accept-Encoding", "identity")
	if *have > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", *have))
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, wasStalled(err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusPartialContent && *have > 0:
		// The range must start where the partial file ends, of a file of the size the
		// Hub announced; else start again rather than splice two different files.
		var first, last, total int64
		if _, err := fmt.Sscanf(resp.Header.Get("Content-Range"), "bytes %d-%d/%d", &first, &last, &total); err != nil ||
			first != *have || total != m.size {
			*have, *resumed = 0, 0
			return 0, restart(f, h)
		}
	case resp.StatusCode == http.StatusOK:
		// A server that ignores Range sends the whole file: start again.
		if *have > 0 {
			if err := restart(f, h); err != nil {
				return 0, &fatalError{err}
			}
			*have, *resumed = 0, 0
			report()
		}
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable:
		*have, *resumed = 0, 0
		return 0, restart(f, h)
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode >= 500:
		return 0, fmt.Errorf("the server answered %s", resp.Status)
	default:
		if err := r.statusError(resp); err != nil {
			return 0, &fatalError{err}
		}
		return 0, &fatalError{fmt.Errorf("%s: %s answered %s", r.file, req.URL.Host, resp.Status)}
	}
	var w io.Writer = f
	if h != nil {
		w = io.MultiWriter(f, h)
	}
	var got int64
	for {
		n, rerr := resp.Body.Read(buf)
		watchdog.Reset(r.Stall)
		if *have+int64(n) > m.size {
			*have, *resumed = 0, 0
			if err := restart(f, h); err != nil {
				return got, &fatalError{err}
			}
			return got, fmt.Errorf("the server sent more than the %d bytes announced", m.size)
		}
		if n > 0 {
			if _, err := w.Write(buf[:n]); err != nil {
				return got, &fatalError{fmt.Errorf("writing %s: %w", f.Name(), err)}
			}
			got += int64(n)
			*have += int64(n)
			report()
		}
		if rerr == io.EOF {
			if *have < m.size {
				return got, io.ErrUnexpectedEOF
			}
			return got, nil
		}
		if rerr != nil {
			return got, wasStalled(rerr)
		}
	}
}
