package images

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/podtrace/podtrace/engine/registry"
)

func TestTarFilesAddsParents(t *testing.T) {
	b, err := tarFiles([]File{{Path: "/usr/bin/x", Mode: 0o755, Data: []byte("hi")}, {Path: "/bin/sh", Link: "busybox"}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, h.Name)
	}
	want := []string{"bin/", "bin/sh", "usr/", "usr/bin/", "usr/bin/x"}
	if len(got) != len(want) {
		t.Fatalf("entries %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("entries %v, want %v", got, want)
		}
	}
}

func TestBuildAndPush(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles two programs")
	}
	ctx := context.Background()
	imgs, err := Build(ctx, Config{CacheDir: filepath.Join(t.TempDir(), "not-yet")}) // made on first use
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.Start(ctx, registry.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	if err := Push(ctx, reg.Host, imgs); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{Pause, Demo, Busybox} {
		r, err := name.ParseReference(reg.Host+"/"+ref, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		img, err := remote.Image(r, remote.WithContext(ctx))
		if err != nil {
			t.Fatalf("%s not in the registry: %v", ref, err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.OS != "linux" || len(cf.Config.Env) == 0 {
			t.Errorf("%s config: os %q env %v", ref, cf.OS, cf.Config.Env)
		}
	}
	again, err := Build(ctx, Config{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := imgs[1].Image.Digest()
	d2, _ := again[1].Image.Digest()
	if d1 != d2 {
		t.Errorf("demo image not repeatable: %s then %s", d1, d2)
	}
}
