package model

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestCatalogueFile checks the embedded catalogue: it parses, names each
// image as the kubelet normalizes it, and is in the format WriteCatalogue
// writes (so `go run ./hack/imagetags` changes only what the registries
// list, never the layout).
func TestCatalogueFile(t *testing.T) {
	images, err := ParseCatalogue(strings.NewReader(catalogueText))
	if err != nil {
		t.Fatal(err)
	}
	if len(images) < 20 {
		t.Fatalf("%d images in the catalogue", len(images))
	}
	for _, img := range images {
		ref, err := parseReference(img.Name)
		if err != nil || ref.Name() != img.Name {
			t.Errorf("%s is not a normalized repository (%v)", img.Name, err)
		}
		if len(img.Tags) == 0 {
			t.Errorf("%s has no tags", img.Name)
		}
		for _, tag := range img.Tags {
			if r, err := parseReference(img.Name + ":" + tag); err != nil || r.Tag != tag {
				t.Errorf("%s: tag %q does not parse: %v", img.Name, tag, err)
			}
		}
	}
	var provenance []string
	for _, l := range strings.Split(catalogueText, "\n")[len(catalogueFormat):] {
		if !strings.HasPrefix(l, "#") {
			break
		}
		provenance = append(provenance, strings.TrimPrefix(strings.TrimPrefix(l, "#"), " "))
	}
	var buf bytes.Buffer
	if err := WriteCatalogue(&buf, provenance, images); err != nil {
		t.Fatal(err)
	}
	if buf.String() != catalogueText {
		t.Error("catalogue.txt is not in WriteCatalogue's format (sorted, deduplicated, wrapped tags)")
	}
}

func TestParseCatalogueErrors(t *testing.T) {
	tests := []struct{ text, want string }{
		{"    1.0 2.0\n", "line 1: tags before any image"},
		{"# c\ndocker.io/library/x\n", `line 2: "docker.io/library/x" is not "NAME SIZE"`},
		{"docker.io/library/x big\n", "the size is not a positive number"},
		{"docker.io/library/x 0\n", "the size is not a positive number"},
	}
	for _, tt := range tests {
		if _, err := ParseCatalogue(strings.NewReader(tt.text)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want %q", tt.text, err, tt.want)
		}
	}
	got, err := ParseCatalogue(strings.NewReader("a.io/x 5\n    1 2\n\tlatest\nb.io/y 7\n    v1\n"))
	want := []CatalogueImage{{Name: "a.io/x", Size: 5, Tags: []string{"1", "2", "latest"}}, {Name: "b.io/y", Size: 7, Tags: []string{"v1"}}}
	if err != nil || len(got) != 2 || !slices.EqualFunc(got, want, func(a, b CatalogueImage) bool {
		return a.Name == b.Name && a.Size == b.Size && slices.Equal(a.Tags, b.Tags)
	}) {
		t.Errorf("got %+v %v", got, err)
	}
}

func TestSortTags(t *testing.T) {
	in := []string{"latest", "1.27.10", "1.9", "1.27-alpine", "1.27.2", "1.27", "v3.10.0", "v3.9.1", "1.27", "1", "alpine", "3.10.1", "3.10"}
	want := []string{"1", "1.9", "1.27", "1.27-alpine", "1.27.2", "1.27.10", "3.10", "3.10.1", "alpine", "latest", "v3.9.1", "v3.10.0"}
	if got := SortTags(in); !slices.Equal(got, want) {
		t.Errorf("SortTags:\n got %v\nwant %v", got, want)
	}
}

// imageLine is an image named in a manifest.
var imageLine = regexp.MustCompile(`(?m)^\s*-?\s*image:\s*["']?([^\s"'#]+)`)

// TestProjectImages pulls every image the project's own scenarios,
// workloads and examples name: each pulls, except the ones that are meant
// to fail, and those fail as their scenario says.
func TestProjectImages(t *testing.T) {
	mustFail := map[string]string{
		"ngnix:1.27":                          "pull access denied, repository does not exist", // image-typo, workloads/typo.yaml
		"ghcr.io/acme/private-payments:2.3.1": "no basic auth credentials",                     // private-image, before the pull secret
		"podtrace.dev/demo:1.0":               "lookup podtrace.dev: no such host",             // examples/demo.yaml is for --runtime containerd
	}
	root := filepath.Join("..", "..", "..", "..")
	var files []string
	for _, dir := range []string{"engine/scenario/builtin", "source/live/workloads", "examples"} {
		m, err := filepath.Glob(filepath.Join(root, dir, "*.yaml"))
		if err != nil || len(m) == 0 {
			t.Fatalf("no manifests in %s: %v", dir, err)
		}
		files = append(files, m...)
	}
	seen := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range imageLine.FindAllStringSubmatch(string(b), -1) {
			image := m[1]
			seen[image] = true
			ref, err := parseReference(image)
			if err != nil {
				t.Errorf("%s: %s: %v", f, image, err)
				continue
			}
			perr := pullError(ref, resolve(ref))
			switch want, ok := mustFail[image]; {
			case ok && (perr == nil || !strings.Contains(perr.Error(), want)):
				t.Errorf("%s: pull %s: %v, want %q", f, image, perr, want)
			case !ok && perr != nil:
				t.Errorf("%s: pull %s: %v", f, image, perr)
			}
		}
	}
	for image := range mustFail {
		if !seen[image] {
			t.Errorf("%s is no longer in any manifest: drop it from mustFail", image)
		}
	}
	if !seen["nginx:1.27"] || !seen["busybox:1.36"] {
		t.Errorf("the manifests' images were not found: %v", seen)
	}
}
