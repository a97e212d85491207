// Package images builds the container images podtrace's real-container
// mode needs — a pause image, an HTTP demo server and a busybox image for
// commands — as OCI images made in Go (no Docker), and pushes them to a
// registry. The Go programs (pause/, demo/) are compiled statically with
// the go toolchain; busybox comes from Debian's busybox-static package.
package images

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"path"
	"runtime"
	"slices"
	"sort"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Host is the registry host of podtrace's images in their names; the
// images are served from the loopback registry under it.
const Host = "podtrace.dev"

// The images podtrace builds, as pods name them.
const (
	Pause   = "podtrace.dev/pause:3.10"
	Demo    = "podtrace.dev/demo:1.0"
	Busybox = "podtrace.dev/busybox:1.35"
)

// epoch is every file's modification time, so that builds are repeatable.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// File is one entry of an image layer.
type File struct {
	Path string // absolute path inside the image
	Mode int64
	Data []byte
	// Link makes the entry a symbolic link to Link.
	Link string
	Dir  bool
}

// Built is an image ready to push.
type Built struct {
	Ref   string // e.g. podtrace.dev/demo:1.0
	Image v1.Image
}

// Config configures Build.
type Config struct {
	// CacheDir keeps compiled binaries between runs (required).
	CacheDir string
	// Busybox is the static busybox binary; /bin/busybox when empty.
	Busybox string
	// Go is the go command; from PATH (or GOROOT) when empty.
	Go string
}

// Build makes the pause, demo and busybox images.
func Build(ctx context.Context, cfg Config) ([]Built, error) {
	pause, err := compile(ctx, cfg, "pause", pauseSrc)
	if err != nil {
		return nil, err
	}
	demo, err := compile(ctx, cfg, "demo", demoSrc)
	if err != nil {
		return nil, err
	}
	bb, err := readBusybox(cfg)
	if err != nil {
		return nil, fmt.Errorf("build %s: %w", Busybox, err)
	}
	var out []Built
	for _, s := range []struct {
		ref   string
		files []File
		cfg   v1.Config
	}{
		{Pause, append(baseFiles(), File{Path: "/pause", Mode: 0o755, Data: pause}),
			v1.Config{Entrypoint: []string{"/pause"}, User: "65535:65535"}},
		{Demo, append(baseFiles(), File{Path: "/demo", Mode: 0o755, Data: demo}),
			v1.Config{Entrypoint: []string{"/demo"}, Env: []string{"PORT=8080"},
				ExposedPorts: map[string]struct{}{"8080/tcp": {}}}},
		{Busybox, append(baseFiles(), busyboxFiles(bb, applets)...),
			v1.Config{Cmd: []string{"sh"}}},
	} {
		img, err := Image(s.files, s.cfg)
		if err != nil {
			return nil, fmt.Errorf("build %s: %w", s.ref, err)
		}
		out = append(out, Built{Ref: s.ref, Image: img})
	}
	return out, nil
}

// Image returns a single-layer OCI image of files with config (PATH is
// added to Env when missing).
func Image(files []File, config v1.Config) (v1.Image, error) {
	layer, err := Layer(files)
	if err != nil {
		return nil, err
	}
	return LayeredImage([]v1.Layer{layer}, config)
}

// Layer returns an OCI layer of files. Images that share a Layer share
// its blob in the registry and in containerd's content store. The layer
// keeps its compressed bytes, so that pushing it gzips it no second time.
func Layer(files []File) (v1.Layer, error) {
	layerTar, err := tarFiles(slices.Clone(files))
	if err != nil {
		return nil, err
	}
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
}

// LayeredImage returns an OCI image of layers (the first at the bottom)
// with config (PATH is added to Env when missing).
func LayeredImage(layers []v1.Layer, config v1.Config) (v1.Image, error) {
	hasPath := false
	for _, e := range config.Env {
		if len(e) > 5 && e[:5] == "PATH=" {
			hasPath = true
		}
	}
	if !hasPath {
		config.Env = append([]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, config.Env...)
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	for _, layer := range layers {
		var err error
		img, err = mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{Created: v1.Time{Time: epoch}, CreatedBy: "podtrace images"}})
		if err != nil {
			return nil, err
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = runtime.GOARCH, "linux"
	cf.Created = v1.Time{Time: epoch}
	cf.Config = config
	return mutate.ConfigFile(img, cf)
}

// Push writes every image to the registry at host (plain HTTP), under the
// repository "<registry of ref>/<path of ref>", which is where the
// resolver of package containerd looks for it.
func Push(ctx context.Context, host string, imgs []Built) error {
	for _, b := range imgs {
		dst, err := name.ParseReference(host+"/"+b.Ref, name.Insecure)
		if err != nil {
			return fmt.Errorf("push %s: %w", b.Ref, err)
		}
		if err := remote.Write(dst, b.Image, remote.WithContext(ctx)); err != nil {
			return fmt.Errorf("push %s: %w", b.Ref, err)
		}
	}
	return nil
}

func baseFiles() []File {
	return []File{
		{Path: "/etc", Dir: true, Mode: 0o755},
		{Path: "/etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n")},
		{Path: "/etc/group", Mode: 0o644, Data: []byte("root:x:0:\nnogroup:x:65534:\n")},
		{Path: "/tmp", Dir: true, Mode: 0o1777},
		{Path: "/root", Dir: true, Mode: 0o700},
	}
}

// busyboxFiles installs busybox in /bin with a link per applet of list.
func busyboxFiles(bb []byte, list []string) []File {
	files := []File{{Path: "/bin", Dir: true, Mode: 0o755}, {Path: "/bin/busybox", Mode: 0o755, Data: bb}}
	for _, a := range list {
		files = append(files, File{Path: "/bin/" + a, Link: "busybox"})
	}
	return files
}

// applets are the busybox commands the image links (a subset of `busybox
// --list` that every busybox-static build has).
var applets = []string{"cat", "cp", "date", "echo", "env", "false", "grep", "head", "hostname", "id",
	"ip", "kill", "ls", "mkdir", "mv", "nc", "ping", "ps", "pwd", "rm", "sh", "sleep", "tail", "test",
	"touch", "true", "uname", "wc", "wget", "whoami"}

// tarFiles writes files (parent directories first) as a tar stream.
func tarFiles(files []File) ([]byte, error) {
	sort.SliceStable(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	seen := map[string]bool{}
	var mkdirs func(string) error
	mkdirs = func(dir string) error {
		if dir == "/" || dir == "." || seen[dir] {
			return nil
		}
		if err := mkdirs(path.Dir(dir)); err != nil {
			return err
		}
		seen[dir] = true
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir[1:] + "/", Mode: 0o755, ModTime: epoch})
	}
	for _, f := range files {
		if err := mkdirs(path.Dir(f.Path)); err != nil {
			return nil, err
		}
		h := &tar.Header{Name: f.Path[1:], Mode: f.Mode, ModTime: epoch}
		switch {
		case f.Dir:
			if seen[f.Path] {
				continue
			}
			seen[f.Path] = true
			h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
		case f.Link != "":
			h.Typeflag, h.Linkname, h.Mode = tar.TypeSymlink, f.Link, 0o777
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.Data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(f.Data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
