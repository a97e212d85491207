package images

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
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
	goBin := goCommand(cfg)
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
	cmd.Env = goEnv(cfg)
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build %s: go build: %w: %s", prog, err, strings.TrimSpace(string(b)))
	}
	if err := os.Rename(out+".tmp", out); err != nil {
		return nil, fmt.Errorf("build %s: %w", prog, err)
	}
	return os.ReadFile(out)
}

// goCommand is the go command images are built with: cfg.Go, else the one
// on PATH, else this toolchain's.
func goCommand(cfg Config) string {
	if cfg.Go != "" {
		return cfg.Go
	}
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}

// goEnv is the environment of the go commands that build images: static
// linux binaries, in a module of their own, with this toolchain.
func goEnv(cfg Config) []string {
	env := append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH,
		"GOWORK=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local", "GO111MODULE=on")
	if os.Getenv("GOCACHE") == "" && os.Getenv("HOME") == "" {
		env = append(env, "GOCACHE="+filepath.Join(cfg.CacheDir, "gocache"))
	}
	return env
}

// moduleFiles reads paths (slash-separated, relative to the module's root)
// from module, at the version the go.mod in files requires, as the module
// cache holds it: the data files of upstream's images (pictures,
// certificates) come from the release itself rather than from copies.
func moduleFiles(ctx context.Context, cfg Config, files map[string][]byte, module string, paths ...string) (map[string][]byte, error) {
	if cfg.CacheDir == "" {
		return nil, fmt.Errorf("read %s: images.Config.CacheDir is empty", module)
	}
	if err := os.MkdirAll(cfg.CacheDir, 0o755); err != nil {
		return nil, fmt.Errorf("read %s: %w", module, err)
	}
	work, err := os.MkdirTemp(cfg.CacheDir, "module-")
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", module, err)
	}
	defer os.RemoveAll(work)
	for n, b := range files {
		if err := os.WriteFile(filepath.Join(work, n), b, 0o644); err != nil {
			return nil, fmt.Errorf("read %s: %w", module, err)
		}
	}
	cmd := exec.CommandContext(ctx, goCommand(cfg), "mod", "download", "-json", module)
	cmd.Dir = work
	cmd.Env = goEnv(cfg)
	out, err := cmd.Output()
	var dl struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &dl); err != nil || jerr != nil || dl.Dir == "" {
		why := dl.Error
		if ee, ok := err.(*exec.ExitError); ok && why == "" {
			why = strings.TrimSpace(string(ee.Stderr))
		}
		return nil, fmt.Errorf("read %s: go mod download: %v: %s", module, err, why)
	}
	got := make(map[string][]byte, len(paths))
	for _, p := range paths {
		b, err := os.ReadFile(filepath.Join(dl.Dir, filepath.FromSlash(p)))
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", module, err)
		}
		got[p] = b
	}
	return got, nil
}
