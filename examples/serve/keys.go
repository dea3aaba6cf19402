package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/bonsai-go/sdk/internal/serve"
)

// keyEnv names the environment variable that holds one API key: a key there is not
// shown by ps, as one on the command line is.
const keyEnv = "BONSAI_API_KEY"

// keyFlags are the flags of the API keys.
type keyFlags struct {
	keys        []string // -api-key, each time given
	file        string   // -api-key-file
	metricsAuth bool     // -metrics-auth
}

func (k *keyFlags) register(fs *flag.FlagSet) {
	// Checked when the server starts (startKeys), so that an error names the key by its
	// place, not by its text as the flag package would.
	fs.Func("api-key", "an API `key` the clients must send (Authorization: Bearer KEY or x-api-key: KEY); repeat for more keys. "+
		"Without a key, none is asked", func(s string) error {
		k.keys = append(k.keys, s)
		return nil
	})
	fs.StringVar(&k.file, "api-key-file", "", "a `file` of API keys, one a line (blank lines and lines starting with # are skipped), re-read on SIGHUP; "+
		"also "+keyEnv+" holds one key")
	fs.BoolVar(&k.metricsAuth, "metrics-auth", false, "make /metrics need an API key too (/health and /ready never do)")
}

// keySource is where the server's keys come from: the flags and the environment, fixed,
// and the file, re-read on reload.
type keySource struct {
	fixed []string
	file  string
	keys  *serve.Keys
}

// loadKeys returns the keys of the flags, of the environment (getenv) and of the file;
// nil when none is given.
func loadKeys(kf keyFlags, getenv func(string) string) (*keySource, error) {
	src := &keySource{file: kf.file}
	for i, k := range kf.keys {
		if err := serve.CheckKey(k); err != nil {
			return nil, fmt.Errorf("-api-key %d: %w", i+1, err)
		}
		src.fixed = append(src.fixed, k)
	}
	if k := getenv(keyEnv); k != "" {
		if err := serve.CheckKey(strings.TrimSpace(k)); err != nil {
			return nil, fmt.Errorf("%s: %w", keyEnv, err)
		}
		src.fixed = append(src.fixed, strings.TrimSpace(k))
	}
	if src.file == "" && len(src.fixed) == 0 {
		if kf.metricsAuth {
			return nil, fmt.Errorf("-metrics-auth needs an API key: give -api-key, -api-key-file or %s", keyEnv)
		}
		return nil, nil
	}
	all, err := src.read()
	if err != nil {
		return nil, err
	}
	if src.keys, err = serve.NewKeys(all...); err != nil {
		return nil, err
	}
	return src, nil
}

// read returns the fixed keys and the file's.
func (src *keySource) read() ([]string, error) {
	if src.file == "" {
		return src.fixed, nil
	}
	fromFile, err := readKeyFile(src.file)
	if err != nil {
		return nil, err
	}
	return append(append([]string(nil), src.fixed...), fromFile...), nil
}

// reload reads the file again and replaces the keys, all at once; on an error, the
// keys held stay.
func (src *keySource) reload() (int, error) {
	all, err := src.read()
	if err != nil {
		return 0, err
	}
	return len(all), src.keys.Set(all...)
}

// readKeyFile reads a file of keys, one a line; blank lines and lines starting with #
// are skipped, and the spaces around a key dropped. A file without a key is an error:
// a server started with one would take no request.
func readKeyFile(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("-api-key-file: %w", err)
	}
	defer f.Close()
	var keys []string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if err := serve.CheckKey(line); err != nil {
			return nil, fmt.Errorf("-api-key-file %s:%d: %w", path, n, err)
		}
		keys = append(keys, line)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("-api-key-file %s: %w", path, err)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("-api-key-file %s: no API key in the file (one a line; lines starting with # are comments)", path)
	}
	return keys, nil
}

// startKeys loads the API keys (nil: none given) and, with a key file, re-reads it on
// each SIGHUP until stop is called, logging each reload on stderr. Without a key file
// SIGHUP keeps its usual effect (it ends the process).
func startKeys(kf keyFlags, getenv func(string) string, stderr io.Writer) (keys *serve.Keys, stop func(), err error) {
	src, err := loadKeys(kf, getenv)
	if err != nil || src == nil {
		return nil, func() {}, err
	}
	if src.file == "" {
		return src.keys, func() {}, nil
	}
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGHUP)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		watchKeys(ctx, src, c, log.New(stderr, "serve: ", log.LstdFlags).Printf)
	}()
	return src.keys, func() {
		signal.Stop(c)
		cancel()
		<-done
	}, nil
}

// watchKeys reloads src on each value of reload until ctx ends.
func watchKeys(ctx context.Context, src *keySource, reload <-chan os.Signal, logf func(format string, args ...any)) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-reload:
			if n, err := src.reload(); err != nil {
				logf("API keys not reloaded, keeping the %d held: %v", src.keys.Len(), err)
			} else {
				logf("API keys reloaded from %s: %d in all", src.file, n)
			}
		}
	}
}

// reportKeys says on stderr which keys the server asks for, or, when it asks for none
// and listens on an address other machines can reach, that anyone can use it.
func reportKeys(stderr io.Writer, keys *serve.Keys, kf keyFlags, addr net.Addr) {
	if keys != nil {
		metrics := "/metrics is open"
		if kf.metricsAuth {
			metrics = "/metrics needs one too"
		}
		n := fmt.Sprintf("%d API keys", keys.Len())
		if keys.Len() == 1 {
			n = "1 API key"
		}
		fmt.Fprintf(stderr, "serve: %s; requests need one (Authorization: Bearer KEY or x-api-key: KEY), but /health and /ready; %s\n", n, metrics)
		return
	}
	if reachable(addr) {
		fmt.Fprintf(stderr, "serve: WARNING: no API key, and listening on %s, not a loopback address: anyone who can reach this port can use the model. "+
			"Give -api-key, -api-key-file or %s, or listen on 127.0.0.1.\n", addr, keyEnv)
	}
}

// reachable reports whether a listener on addr can be reached from other machines: an
// address other than loopback (0.0.0.0 and :: are every address).
func reachable(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return true // an address of another kind: better warned than not
	}
	return !tcp.IP.IsLoopback()
}
