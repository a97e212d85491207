package images

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

//go:embed pause/main.go
var pauseSrc []byte

//go:embed demo/main.go
var demoSrc []byte

// compile builds a one-file main package statically for linux/GOARCH and
// returns the binary, cached in cfg.CacheDir by source and Go version.
func compile(ctx context.Context, cfg Config, prog string, src []byte) ([]byte, error) {
	return compileModule(ctx, cfg, prog, map[string][]byte{"main.go": src}, ".")
}

// compileModule builds pkg in a module of files (a go.mod is added when
// files has none) statically for linux/GOARCH and returns the binary,
// cached in cfg.CacheDir by the files and the Go version.
func compileModule(ctx context.Context, cfg Config, prog string, files map[string][]byte, pkg string) ([]byte, error) {
	if cfg.CacheDir == "" {
		return nil, fmt.Errorf("build %s: images.Config.CacheDir is empty", prog)
	}
	goBin := cfg.Go
	if goBin == "" {
		p, err := exec.LookPath("go")
		if err != nil {
			p = filepath.Join(runtime.GOROOT(), "bin", "go")
		}
		goBin = p
	}
	ver, err := exec.CommandContext(ctx, goBin, "env", "GOVERSION").Output()
	if err != nil {
		return nil, fmt.Errorf("build %s: the go command is needed to build podtrace's images: %w", prog, err)
	}
	h := sha256.New()
	for _, n := range slices.Sorted(maps.Keys(files)) {
		h.Write([]byte(n))
		h.Write(files[n])
	}
	h.Write([]byte(pkg))
	h.Write(ver)
	h.Write([]byte(runtime.GOARCH))
	key := hex.EncodeToString(h.Sum(nil))[:16]
	out := filepath.Join(cfg.CacheDir, prog+"-"+key)
	if b, err := os.ReadFile(out); err == nil {
		return b, nil
	}
	if err := os.MkdirAll(cfg.CacheDir, 0o755); err != nil {
		return nil, fmt.Errorf("build %s: %w", prog, err)
	}
	work, err := os.MkdirTemp(cfg.CacheDir, prog+"-src-")
	if err != nil {
		return nil, fmt.Errorf("build %s: %w", prog, err)
	}
	defer os.RemoveAll(work)
	goVer := strings.TrimPrefix(strings.TrimSpace(string(ver)), "go")
	if i := strings.IndexAny(goVer, " -"); i > 0 {
		goVer = goVer[:i]
	}
	if _, ok := files["go.mod"]; !ok {
		files = maps.Clone(files)
		files["go.mod"] = []byte("module podtrace.dev/" + prog + "\n\ngo " + goVer + "\n")
	}
	for n, b := range files {
		if err := os.WriteFile(filepath.Join(work, n), b, 0o644); err != nil {
			return nil, fmt.Errorf("build %s: %w", prog, err)
		}
	}
	cmd := exec.CommandContext(ctx, goBin, "build", "-trimpath", "-ldflags=-s -w", "-o", out+".tmp", pkg)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH,
		"GOWORK=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local", "GO111MODULE=on")
	if os.Getenv("GOCACHE") == "" && os.Getenv("HOME") == "" {
		cmd.Env = append(cmd.Env, "GOCACHE="+filepath.Join(cfg.CacheDir, "gocache"))
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build %s: go build: %w: %s", prog, err, strings.TrimSpace(string(b)))
	}
	if err := os.Rename(out+".tmp", out); err != nil {
		return nil, fmt.Errorf("build %s: %w", prog, err)
	}
	return os.ReadFile(out)
}
