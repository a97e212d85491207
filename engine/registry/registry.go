// Package registry runs an OCI distribution registry on loopback (plain
// HTTP on 127.0.0.1) for podtrace's real-container mode: podtrace pushes
// the images it builds into it and containerd pulls from it, so no pull
// ever leaves the machine.
package registry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	ggcr "github.com/google/go-containerregistry/pkg/registry"
)

// Registry is a running loopback registry.
type Registry struct {
	// Host is "127.0.0.1:PORT".
	Host string
	srv  *http.Server
	ln   net.Listener
	reqs atomic.Int64
}

// Config configures Start.
type Config struct {
	// Addr to listen on; "127.0.0.1:0" (any free port) when empty. Only
	// loopback addresses are accepted.
	Addr string
	// BlobDir keeps blobs on disk; in memory when empty.
	BlobDir string
	// Log receives one line per request; discarded when nil.
	Log io.Writer
}

// Start listens on loopback and serves the registry until ctx ends or Close.
func Start(ctx context.Context, cfg Config) (*Registry, error) {
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("start registry: %w", err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("start registry: %s is not a loopback address", cfg.Addr)
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	opts := []ggcr.Option{ggcr.Logger(log.New(cfg.Log, "registry ", log.LstdFlags))}
	if cfg.BlobDir != "" {
		if err := os.MkdirAll(cfg.BlobDir, 0o755); err != nil {
			return nil, fmt.Errorf("start registry: %w", err)
		}
		opts = append(opts, ggcr.WithBlobHandler(ggcr.NewDiskBlobHandler(filepath.Clean(cfg.BlobDir))))
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("start registry: %w", err)
	}
	r := &Registry{Host: ln.Addr().String(), ln: ln}
	h := ggcr.New(opts...)
	r.srv = &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) { r.reqs.Add(1); h.ServeHTTP(w, req) }),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(cfg.Log, "registry ", log.LstdFlags),
	}
	go func() {
		if err := r.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(cfg.Log, "registry: serve: %v\n", err)
		}
	}()
	go func() { <-ctx.Done(); _ = r.Close() }()
	return r, nil
}

// Requests returns how many HTTP requests the registry served.
func (r *Registry) Requests() int64 { return r.reqs.Load() }

// Close stops serving.
func (r *Registry) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return r.srv.Shutdown(ctx)
}
