package hub_test

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bonsai-go/sdk/internal/hub"
	"github.com/bonsai-go/sdk/internal/hub/hubtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	commit = "0123456789abcdef0123456789abcdef01234567"
	token  = "hf_gatedsecret"
)

// data returns n deterministic pseudo-random bytes.
func data(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

var model = data(48 << 10)

// setup starts a Hub with a public repository org/name holding an LFS file
// sub/model.gguf and a config.json, and points the environment at it with an empty
// cache: HF_HOME is returned.
func setup(t *testing.T) (*hubtest.Server, string) {
	t.Helper()
	s := hubtest.New(t)
	s.Add(hubtest.Repo{ID: "org/name", Commit: commit, Branches: []string{"refs/pr/1"}, Files: []hubtest.File{
		{Path: "sub/model.gguf", Data: model, LFS: true},
		{Path: "config.json", Data: []byte(`{"a": 1}` + "\n")},
		{Path: "dir/a b.gguf", Data: []byte("spaced"), LFS: true},
	}})
	home := t.TempDir()
	for _, v := range []string{"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_TOKEN_PATH", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE",
		"HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "XDG_CACHE_HOME"} {
		t.Setenv(v, "")
	}
	t.Setenv("HF_HOME", home)
	t.Setenv("HF_ENDPOINT", s.Hub.URL)
	return s, home
}

func fast(o hub.Options) hub.Options {
	o.Backoff = time.Millisecond
	return o
}

func TestDownloadLFS(t *testing.T) {
	s, home := setup(t)
	var last hub.Progress
	calls := 0
	path, err := hub.Download(t.Context(), "org/name", "sub/model.gguf", fast(hub.Options{Progress: func(p hub.Progress) { last = p; calls++ }}))
	require.NoError(t, err)
	repo := filepath.Join(home, "hub", "models--org--name")
	assert.Equal(t, filepath.Join(repo, "snapshots", commit, "sub", "model.gguf"), path)
	target, err := os.Readlink(path)
	require.NoError(t, err)
	assert.Equal(t, "../../../blobs/"+hubtest.SHA256(model), filepath.ToSlash(target), "a relative link, as huggingface_hub makes")
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, model, got)
	ref, err := os.ReadFile(filepath.Join(repo, "refs", "main"))
	require.NoError(t, err)
	assert.Equal(t, commit, string(ref))
	assert.NoFileExists(t, filepath.Join(repo, "blobs", hubtest.SHA256(model)+".incomplete"))
	assert.FileExists(t, filepath.Join(home, "hub", ".locks", "models--org--name", hubtest.SHA256(model)+".lock"))
	tag, err := os.ReadFile(filepath.Join(home, "hub", "CACHEDIR.TAG"))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(tag), "Signature: 8a477f597d28d172789f06886806bc55\n"), "the cachedir standard's signature")
	assert.Equal(t, hub.Progress{Done: int64(len(model)), Total: int64(len(model))}, last)
	assert.Greater(t, calls, 1)

	assert.Equal(t, 1, s.Count("hub", "HEAD"))
	assert.Equal(t, 0, s.Count("hub", "GET"))
	assert.Equal(t, 1, s.Count("cdn", "GET"))

	// The second run finds the file: a HEAD, no GET.
	again, err := hub.Download(t.Context(), "org/name", "sub/model.gguf", hub.Options{})
	require.NoError(t, err)
	assert.Equal(t, path, again)
	assert.Equal(t, 2, s.Count("hub", "HEAD"))
	assert.Equal(t, 1, s.Count("", "GET"))
}

func TestDownloadNotLFS(t *testing.T) {
	s, home := setup(t)
	path, err := hub.Download(t.Context(), "org/name", "config.json", hub.Options{})
	require.NoError(t, err)
	target, err := os.Readlink(path)
	require.NoError(t, err)
	// A file outside LFS is named by its git blob id (hand-checked: `git hash-object`).
	assert.Equal(t, "../../blobs/cb5b2f69babc53f9145b45ad20b9a075d48717ef", filepath.ToSlash(target))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, `{"a": 1}`+"\n", string(got))
	assert.Equal(t, 1, s.Count("hub", "GET"))
	assert.Equal(t, 0, s.Count("cdn", "GET"))
	assert.DirExists(t, filepath.Join(home, "hub", "models--org--name", "blobs"))
}

func TestEscaping(t *testing.T) {
	s, _ := setup(t)
	path, err := hub.Download(t.Context(), "org/name", "dir/a b.gguf", hub.Options{Revision: "refs/pr/1"})
	require.NoError(t, err)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "spaced", string(got))
	reqs := s.Requests()
	require.NotEmpty(t, reqs)
	// hf_hub_url: the revision escaped whole, the file part by part.
	assert.Equal(t, "/org/name/resolve/refs%2Fpr%2F1/dir/a%20b.gguf", reqs[0].RawPath)
	ref, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(path)))), "refs", "refs", "pr", "1"))
	require.NoError(t, err)
	assert.Equal(t, commit, string(ref))
}

func TestDroppedConnectionResumes(t *testing.T) {
	s, _ := setup(t)
	s.SetFault(hubtest.Fault{Times: 2, DropAfter: 10000})
	var resumed []int64
	path, err := hub.Download(t.Context(), "org/name", "sub/model.gguf", fast(hub.Options{Progress: func(p hub.Progress) {
		if len(resumed) == 0 || resumed[len(resumed)-1] != p.Resumed {
			resumed = append(resumed, p.Resumed)
		}
	}}))
	require.NoError(t, err)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, model, got)
	var ranges []string
	for _, r := range s.Requests() {
		if r.Server == "cdn" {
			ranges = append(ranges, r.Range)
		}
	}
	assert.Equal(t, []string{"", "bytes=10000-", "bytes=20000-"}, ranges)
	assert.Equal(t, []int64{0}, resumed, "within one call, bytes resumed are this call's own")
}

func TestGivesUp(t *testing.T) {
	s, home := setup(t)
	s.SetFault(hubtest.Fault{Times: 100, Status: 503})
	_, err := hub.Download(t.Context(), "org/name", "sub/model.gguf", fast(hub.Options{Retries: 2}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "503")
	assert.Contains(t, err.Error(), "gave up after 3 tries")
	assert.Equal(t, 3, s.Count("cdn", "GET"))
	assert.NoFileExists(t, filepath.Join(home, "hub", "models--org--name", "snapshots", commit, "sub", "model.gguf"))
}

// interrupt downloads the model until at least n bytes are on disk, then cancels.
func interrupt(t *testing.T, n int64) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	_, err := hub.Download(ctx, "org/name", "sub/model.gguf", fast(hub.Options{Progress: func(p hub.Progress) {
		if p.Done >= n {
			cancel()
		}
	}}))
	require.ErrorIs(t, err, context.Canceled)
}

func TestResumeAcrossRuns(t *testing.T) {
	s, home := setup(t)
	s.SetFault(hubtest.Fault{Times: 1, DropAfter: 12345, Stall: true})
	interrupt(t, 12345)
	part := filepath.Join(home, "hub", "models--org--name", "blobs", hubtest.SHA256(model)+".incomplete")
	st, err := os.Stat(part)
	require.NoError(t, err)
	assert.Equal(t, int64(12345), st.Size())

	var first hub.Progress
	path, err := hub.Download(t.Context(), "org/name", "sub/model.gguf", fast(hub.Options{Progress: func(p hub.Progress) {
		if first.Total == 0 {
			first = p
		}
	}}))
	require.NoError(t, err)
	assert.Equal(t, hub.Progress{Done: 12345, Total: int64(len(model)), Resumed: 12345}, first)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, model, got)
	reqs := s.Requests()
	assert.Equal(t, "bytes=12345-", reqs[len(reqs)-1].Range)
	assert.NoFileExists(t, part)
}

func TestServerIgnoringRange(t *testing.T) {
	s, _ := setup(t)
	s.SetFault(hubtest.Fault{Times: 1, DropAfter: 5000, Stall: true})
	interrupt(t, 5000)
	s.SetFault(hubtest.Fault{Times: 1, IgnoreRange: true})
	var last hub.Progress
	path, err := hub.Download(t.Context(), "org/name", "sub/model.gguf", fast(hub.Options{Progress: func(p hub.Progress) { last = p }}))
	require.NoError(t, err)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, model, got, "a 200 to a Range request starts the file again")
	assert.Equal(t, int64(0), last.Resumed)
}

func TestCancelStopsPromptly(t *testing.T) {
	s, home := setup(t)
	s.SetFault(hubtest.Fault{Times: 1, DropAfter: 4096, Stall: true})
	ctx, cancel := context.WithCancel(t.Context())
	started := make(chan struct{})
	var once sync.Once
	done := make(chan error, 1)
	go func() {
		_, err := hub.Download(ctx, "org/name", "sub/model.gguf", hub.Options{Progress: func(p hub.Progress) {
			if p.Done >= 4096 {
				once.Do(func() { close(started) })
			}
		}})
		done <- err
	}()
	<-started // the body is stalled: only the cancellation ends the call
	t0 := time.Now()
	cancel()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.Canceled)
		assert.Less(t, time.Since(t0), 2*time.Second)
	case <-time.After(10 * time.Second):
		t.Fatal("Download did not return after its context was cancelled")
	}
	assert.FileExists(t, filepath.Join(home, "hub", "models--org--name", "blobs", hubtest.SHA256(model)+".incomplete"), "kept, to resume")
}

func TestChecksumMismatch(t *testing.T) {
	s, home := setup(t)
	s.SetFault(hubtest.Fault{Times: 1, Corrupt: true})
	_, err := hub.Download(t.Context(), "org/name", "sub/model.gguf", hub.Options{})
	require.ErrorIs(t, err, hub.ErrChecksum)
	bad := append([]byte(nil), model...)
	bad[len(bad)/2] ^= 1
	assert.Contains(t, err.Error(), "sub/model.gguf")
	assert.Contains(t, err.Error(), hubtest.SHA256(model), "the expected digest")
	assert.Contains(t, err.Error(), hubtest.SHA256(bad), "the actual digest")
	assert.Contains(t, err.Error(), "deleted")
	blobs := filepath.Join(home, "hub", "models--org--name", "blobs")
	assert.NoFileExists(t, filepath.Join(blobs, hubtest.SHA256(model)+".incomplete"))
	assert.NoFileExists(t, filepath.Join(blobs, hubtest.SHA256(model)))
	assert.NoFileExists(t, filepath.Join(home, "hub", "models--org--name", "snapshots", commit, "sub", "model.gguf"))

	path, err := hub.Download(t.Context(), "org/name", "sub/model.gguf", hub.Options{})
	require.NoError(t, err)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, model, got)
}

func TestGatedRepo(t *testing.T) {
	s, home := setup(t)
	s.Add(hubtest.Repo{ID: "org/gated", Commit: commit, Token: token, Files: []hubtest.File{{Path: "m.gguf", Data: model, LFS: true}}})

	_, err := hub.Download(t.Context(), "org/gated", "m.gguf", hub.Options{})
	require.ErrorIs(t, err, hub.ErrAuth)
	assert.Contains(t, err.Error(), "401")
	assert.Contains(t, err.Error(), "set HF_TOKEN")
	assert.Contains(t, err.Error(), s.Hub.URL+"/org/gated")

	_, err = hub.Download(t.Context(), "org/gated", "m.gguf", hub.Options{Token: "hf_wrong"})
	require.ErrorIs(t, err, hub.ErrAuth)
	assert.Contains(t, err.Error(), "403")
	assert.Contains(t, err.Error(), "refused")

	// The token file `hf auth login` writes.
	require.NoError(t, os.WriteFile(filepath.Join(home, "token"), []byte(token+"\n"), 0o600))
	path, err := hub.Download(t.Context(), "org/gated", "m.gguf", hub.Options{})
	require.NoError(t, err)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, model, got)
	cdn := 0
	for _, r := range s.Requests() {
		if r.Server == "cdn" {
			cdn++
			// Both servers are on 127.0.0.1 (other ports): Go's client alone would have
			// forwarded the token through a redirect there.
			assert.Empty(t, r.Authorization, "the token must not reach the CDN")
		}
	}
	assert.Equal(t, 1, cdn)
	reqs := s.Requests()
	assert.Equal(t, "Bearer "+token, reqs[len(reqs)-2].Authorization, "the Hub's HEAD carries it")
}

func TestTokenNotForwardedThroughRedirect(t *testing.T) {
	// The HEAD answers 200, so the GET goes to the Hub's host, with the token, and is
	// redirected there to the CDN, which must not get it.
	s, _ := setup(t)
	s.Add(hubtest.Repo{ID: "org/gated", Commit: commit, Token: token, Files: []hubtest.File{{Path: "m.gguf", Data: model, LFS: true, DirectHEAD: true}}})
	t.Setenv("HF_TOKEN", token)
	path, err := hub.Download(t.Context(), "org/gated", "m.gguf", hub.Options{})
	require.NoError(t, err)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, model, got)
	var seen []string
	for _, r := range s.Requests() {
		seen = append(seen, r.Server+" "+r.Method+" "+r.Authorization)
	}
	// Both servers are on 127.0.0.1 (other ports): Go's client alone would have
	// forwarded the token through the redirect.
	assert.Equal(t, []string{"hub HEAD Bearer " + token, "hub GET Bearer " + token, "cdn GET "}, seen)
}

func TestRenamedRepo(t *testing.T) {
	s, home := setup(t)
	s.Rename("old/name", "org/name")
	path, err := hub.Download(t.Context(), "old/name", "sub/model.gguf", hub.Options{})
	require.NoError(t, err)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, model, got)
	assert.True(t, strings.HasPrefix(path, filepath.Join(home, "hub", "models--old--name")), path)
	reqs := s.Requests()
	require.GreaterOrEqual(t, len(reqs), 3)
	assert.Equal(t, "/old/name/resolve/main/sub/model.gguf", reqs[0].Path)
	assert.Equal(t, "/org/name/resolve/main/sub/model.gguf", reqs[1].Path)
	assert.Equal(t, "HEAD", reqs[1].Method)
}

func TestNotFound(t *testing.T) {
	setup(t)
	_, err := hub.Download(t.Context(), "org/name", "nope.gguf", hub.Options{})
	require.ErrorIs(t, err, hub.ErrNotFound)
	assert.Contains(t, err.Error(), "file nope.gguf not found")
	assert.Contains(t, err.Error(), "org/name")

	_, err = hub.Download(t.Context(), "org/name", "sub/model.gguf", hub.Options{Revision: "v9"})
	require.ErrorIs(t, err, hub.ErrNotFound)
	assert.Contains(t, err.Error(), "revision v9 of org/name not found")

	// The Hub does not tell an anonymous caller that a repository does not exist.
	_, err = hub.Download(t.Context(), "org/missing", "m.gguf", hub.Options{})
	require.ErrorIs(t, err, hub.ErrAuth)
	assert.Contains(t, err.Error(), "or does not exist")
}

func TestBadNames(t *testing.T) {
	setup(t)
	for _, c := range []struct{ repo, file, rev, want string }{
		{"org/name", "../x", "", `no empty, "." or ".." part`},
		{"org/name", "/abs", "", `no empty, "." or ".." part`},
		{"org/../x", "f", "", "not ORG/NAME"},
		{"a/b/c", "f", "", "not ORG/NAME"},
		{"org/name", "f", "../../x", `"..`},
	} {
		_, err := hub.Download(t.Context(), c.repo, c.file, hub.Options{Revision: c.rev})
		require.Error(t, err, "%+v", c)
		assert.Contains(t, err.Error(), c.want)
	}
}

// hfLayout lays the model out in cache as huggingface_hub does after
// hf_hub_download("org/name", "sub/model.gguf"): the blob named by its sha256, the
// snapshot's relative link, refs/main.
func hfLayout(t *testing.T, cache string) string {
	t.Helper()
	repo := filepath.Join(cache, "models--org--name")
	blob := filepath.Join(repo, "blobs", hubtest.SHA256(model))
	snap := filepath.Join(repo, "snapshots", commit, "sub", "model.gguf")
	require.NoError(t, os.MkdirAll(filepath.Dir(blob), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Dir(snap), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(repo, "refs"), 0o755))
	require.NoError(t, os.WriteFile(blob, model, 0o644))
	require.NoError(t, os.Symlink("../../../blobs/"+hubtest.SHA256(model), snap))
	require.NoError(t, os.WriteFile(filepath.Join(repo, "refs", "main"), []byte(commit), 0o644))
	return snap
}

func TestFindsHuggingfaceCache(t *testing.T) {
	s, home := setup(t)
	snap := hfLayout(t, filepath.Join(home, "hub"))
	path, err := hub.Download(t.Context(), "org/name", "sub/model.gguf", hub.Options{})
	require.NoError(t, err)
	assert.Equal(t, snap, path)
	assert.Equal(t, 0, s.Count("", "GET"))
	assert.Equal(t, 1, s.Count("hub", "HEAD"))

	// A commit names its snapshot: nothing is asked.
	path, err = hub.Download(t.Context(), "org/name", "sub/model.gguf", hub.Options{Revision: commit})
	require.NoError(t, err)
	assert.Equal(t, snap, path)
	assert.Len(t, s.Requests(), 1)

	// HF_HUB_CACHE instead of HF_HOME/hub.
	other := t.TempDir()
	t.Setenv("HF_HUB_CACHE", other)
	snap2 := hfLayout(t, other)
	path, err = hub.Download(t.Context(), "org/name", "sub/model.gguf", hub.Options{})
	require.NoError(t, err)
	assert.Equal(t, snap2, path)
	assert.Equal(t, 0, s.Count("", "GET"))
}

func TestOffline(t *testing.T) {
	s, home := setup(t)
	t.Setenv("HF_HUB_OFFLINE", "1")
	_, err := hub.Download(t.Context(), "org/name", "sub/model.gguf", hub.Options{})
	require.ErrorIs(t, err, hub.ErrNotCached)
	assert.Contains(t, err.Error(), "HF_HUB_OFFLINE")
	assert.Contains(t, err.Error(), "org/name: sub/model.gguf at revision main: offline (HF_HUB_OFFLINE) and not in the cache "+filepath.Join(home, "hub"))
	snap := hfLayout(t, filepath.Join(home, "hub"))
	path, err := hub.Download(t.Context(), "org/name", "sub/model.gguf", hub.Options{})
	require.NoError(t, err)
	assert.Equal(t, snap, path)
	assert.Empty(t, s.Requests())
}

func TestHubUnreachable(t *testing.T) {
	s, home := setup(t)
	s.Hub.Close()
	_, err := hub.Download(t.Context(), "org/name", "sub/model.gguf", hub.Options{})
	require.ErrorIs(t, err, hub.ErrNotCached)
	assert.Contains(t, err.Error(), "cannot be reached")
	snap := hfLayout(t, filepath.Join(home, "hub"))
	path, err := hub.Download(t.Context(), "org/name", "sub/model.gguf", hub.Options{})
	require.NoError(t, err)
	assert.Equal(t, snap, path)
}

func TestConcurrentPullsShareOneDownload(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no lock on Windows (lock_other.go)")
	}
	s, _ := setup(t)
	var wg sync.WaitGroup
	paths := make([]string, 4)
	errs := make([]error, 4)
	for i := range paths {
		wg.Go(func() {
			paths[i], errs[i] = hub.Download(t.Context(), "org/name", "sub/model.gguf", hub.Options{})
		})
	}
	wg.Wait()
	for i := range paths {
		require.NoError(t, errs[i])
		assert.Equal(t, paths[0], paths[i])
	}
	got, err := os.ReadFile(paths[0])
	require.NoError(t, err)
	assert.Equal(t, model, got)
	assert.Equal(t, 1, s.Count("cdn", "GET"), "the lock lets one download the blob; the others find it")
}

func TestStalledConnectionResumes(t *testing.T) {
	s, _ := setup(t)
	s.SetFault(hubtest.Fault{Times: 1, DropAfter: 7000, Stall: true})
	t0 := time.Now()
	path, err := hub.Download(t.Context(), "org/name", "sub/model.gguf", fast(hub.Options{Stall: 100 * time.Millisecond}))
	require.NoError(t, err)
	assert.Less(t, time.Since(t0), 5*time.Second)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, model, got)
	var ranges []string
	for _, r := range s.Requests() {
		if r.Server == "cdn" {
			ranges = append(ranges, r.Range)
		}
	}
	assert.Equal(t, []string{"", "bytes=7000-"}, ranges, "the stalled request is dropped and resumed")
}

func TestHomeDefaults(t *testing.T) {
	t.Setenv("HF_HOME", "")
	t.Setenv("HF_HUB_CACHE", "")
	t.Setenv("HUGGINGFACE_HUB_CACHE", "")
	t.Setenv("XDG_CACHE_HOME", "/xdg")
	home, err := hub.Home()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join("/xdg", "huggingface"), home)
	dir, err := hub.CacheDir()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join("/xdg", "huggingface", "hub"), dir)
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("HOME", "/home/u")
	home, err = hub.Home()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join("/home/u", ".cache", "huggingface"), home)
	t.Setenv("HF_HOME", "~/hf")
	home, err = hub.Home()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join("/home/u", "hf"), home)
	t.Setenv("HF_HUB_CACHE", "$HOME/c")
	dir, err = hub.CacheDir()
	require.NoError(t, err)
	assert.Equal(t, "/home/u/c", dir)

	t.Setenv("HF_TOKEN", "")
	t.Setenv("HUGGING_FACE_HUB_TOKEN", "")
	tdir := t.TempDir()
	t.Setenv("HF_HOME", tdir)
	t.Setenv("HF_TOKEN_PATH", "")
	assert.Equal(t, "", hub.Token())
	require.NoError(t, os.WriteFile(filepath.Join(tdir, "token"), []byte(" hf_file \n"), 0o600))
	assert.Equal(t, "hf_file", hub.Token())
	t.Setenv("HF_TOKEN", "hf_env")
	assert.Equal(t, "hf_env", hub.Token(), "HF_TOKEN comes first")
}
