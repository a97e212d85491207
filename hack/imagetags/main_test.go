package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/podtrace/podtrace/engine/cri/sim/model"
)

// TestRun lists the tags of a registry on loopback (go-containerregistry's
// own, in memory) and checks the rewritten catalogue: the registry's tags
// in version order without signature tags, the size kept, the date said.
func TestRun(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, tag := range []string{"1.10", "latest", "1.9", "sha256-0123.sig", "1.9-alpine"} {
		ref, err := name.NewTag(host + "/library/web:" + tag)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(ref, img); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(t.TempDir(), "catalogue.txt")
	old := "# old\n" + host + "/library/web 1234\n    1.0\n"
	if err := os.WriteFile(file, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), file, time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(file)
	if !strings.Contains(string(b), "# Made by `go run ./hack/imagetags` on 2026-11-27 from the registries' tag lists.") {
		t.Errorf("no provenance line:\n%s", b)
	}
	images, err := model.ParseCatalogue(bytes.NewReader(b))
	want := []string{"1.9", "1.9-alpine", "1.10", "latest"}
	if err != nil || len(images) != 1 || images[0].Size != 1234 || !slices.Equal(images[0].Tags, want) {
		t.Fatalf("rewritten catalogue %+v %v, want tags %v:\n%s", images, err, want, b)
	}

	// A registry that cannot be reached: one line, the file unchanged.
	srv.Close()
	if err := os.WriteFile(file, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	err = run(context.Background(), file, time.Now())
	if err == nil || !strings.Contains(err.Error(), host+"/library/web: ") || !strings.Contains(err.Error(), "is unchanged") {
		t.Errorf("unreachable registry: %v", err)
	}
	if got, _ := os.ReadFile(file); string(got) != old {
		t.Errorf("file changed after a failure:\n%s", got)
	}
}
