package bonsai

import (
	"context"
	"fmt"
	"net/http"

	"github.com/bonsai-go/sdk/internal/hub"
)

// Errors of Pull, for errors.Is.
var (
	// ErrHubAuth: the Hub answered 401 or 403: the repository is gated or private (or
	// does not exist), and a token with access is needed (HF_TOKEN).
	ErrHubAuth = hub.ErrAuth
	// ErrHubNotFound: the Hub has no such repository revision or file.
	ErrHubNotFound = hub.ErrNotFound
	// ErrChecksum: the downloaded file does not have the sha256 the Hub announced; the
	// partial download has been deleted.
	ErrChecksum = hub.ErrChecksum
	// ErrNotCached: offline (HF_HUB_OFFLINE, or the Hub could not be reached) and the
	// file is not in the cache.
	ErrNotCached = hub.ErrNotCached
)

// PullProgress is the progress of Pull's download, in bytes.
type PullProgress struct {
	Done    int64 // bytes of the file on disk, Resumed included
	Total   int64 // the file's size
	Resumed int64 // bytes kept from an interrupted attempt or an earlier run
}

// PullOption configures Pull.
type PullOption func(*hub.Options)

// WithPullRevision pulls the file at a branch, tag or commit (default "main"). A
// commit whose file is in the cache is used without asking the Hub.
func WithPullRevision(rev string) PullOption { return func(o *hub.Options) { o.Revision = rev } }

// WithPullEndpoint sets the Hub's address (default HF_ENDPOINT, else
// https://huggingface.co): a mirror, or a test server.
func WithPullEndpoint(url string) PullOption { return func(o *hub.Options) { o.Endpoint = url } }

// WithPullToken sets the token sent to the Hub (default HF_TOKEN, else the file
// `hf auth login` wrote under HF_HOME). It is never sent to another host, such as the
// CDN the Hub redirects a download to.
func WithPullToken(token string) PullOption { return func(o *hub.Options) { o.Token = token } }

// WithPullCacheDir sets the cache, laid out as huggingface_hub's (default
// HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub).
func WithPullCacheDir(dir string) PullOption { return func(o *hub.Options) { o.CacheDir = dir } }

// WithPullOffline uses the cache only, as HF_HUB_OFFLINE=1 does.
func WithPullOffline() PullOption { return func(o *hub.Options) { o.Offline = true } }

// WithPullClient sets the HTTP client (default http.DefaultClient). Pull sets its
// redirect policy on a copy.
func WithPullClient(c *http.Client) PullOption { return func(o *hub.Options) { o.Client = c } }

// WithPullProgress receives the download's progress, from the goroutine running Pull,
// after every chunk read. It is not called when the file is in the cache.
func WithPullProgress(f func(PullProgress)) PullOption {
	return func(o *hub.Options) {
		o.Progress = func(p hub.Progress) { f(PullProgress(p)) }
	}
}

// Pull returns the local path of file in the Hugging Face Hub repository repo
// ("ORG/NAME"), downloading it first if it is not in the cache, so that Open can read
// it:
//
//	path, err := bonsai.Pull(ctx, "prism-ml/Ternary-Bonsai-2-27B-GGUF", "Ternary-Bonsai-2-27B-PQ2_0.gguf")
//	if err != nil { ... } // ErrHubAuth, ErrHubNotFound, ErrChecksum, ErrNotCached
//	m, err := bonsai.Open(path)
//
// It speaks the Hub's file protocol and keeps huggingface_hub's cache, read from the
// same environment (HF_ENDPOINT, HF_TOKEN, HF_HOME, HF_HUB_CACHE, HF_HUB_OFFLINE): a
// file huggingface-cli downloaded is found without a download, and the other way
// round. An interrupted download is resumed (with Range requests: up to 5 times in a
// row within the call, and from the partial file on the next call), and an LFS file is
// checked against the sha256 the Hub gives before it is kept. When the Hub cannot be
// reached, the file the revision last named in the cache is returned. Cancelling ctx
// stops the download, keeping what it got for the next call.
func Pull(ctx context.Context, repo, file string, opts ...PullOption) (string, error) {
	var o hub.Options
	for _, opt := range opts {
		opt(&o)
	}
	path, err := hub.Download(ctx, repo, file, o)
	if err != nil {
		return "", fmt.Errorf("bonsai: pull: %w", err)
	}
	return path, nil
}

// PullRef is Pull of a model reference, hf:ORG/NAME/FILE or hf:ORG/NAME@REVISION/FILE
// (FILE may hold '/'; a REVISION holding '/' is written escaped, refs%2Fpr%2F1), the
// syntax of huggingface_hub's HfFileSystem paths, which every example's -model also
// takes. A revision in ref overrides WithPullRevision.
func PullRef(ctx context.Context, ref string, opts ...PullOption) (string, error) {
	r, err := hub.ParseRef(ref)
	if err != nil {
		return "", fmt.Errorf("bonsai: pull: %w", err)
	}
	if r.Revision != "" {
		opts = append(opts, WithPullRevision(r.Revision))
	}
	return Pull(ctx, r.Repo, r.File, opts...)
}

// IsModelRef reports whether name is a model reference for PullRef (it starts with
// "hf:") rather than a file name.
func IsModelRef(name string) bool { return hub.IsRef(name) }
