// Command imagetags rewrites the simulated registries' catalogue
// (engine/cri/sim/model/catalogue.txt) with the tags each image's registry
// lists, through the distribution API's tag list (GET /v2/NAME/tags/list,
// anonymously and page by page, as go-containerregistry's remote.List does
// it: Docker Hub, registry.k8s.io, ghcr.io, quay.io and gcr.io all answer
// it). Sizes and the list of images stay as the file has them. It needs the
// registries: where one cannot be reached it leaves the file as it was and
// says so in one line.
//
//	go run ./hack/imagetags [-file engine/cri/sim/model/catalogue.txt]
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/podtrace/podtrace/engine/cri/sim/model"
)

func main() {
	file := flag.String("file", filepath.Join("engine", "cri", "sim", "model", "catalogue.txt"), "the catalogue to rewrite")
	timeout := flag.Duration("timeout", 5*time.Minute, "give up on the registries after this long")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := run(ctx, *file, time.Now()); err != nil {
		fmt.Fprintln(os.Stderr, "imagetags: "+oneLine(err.Error()))
		os.Exit(1)
	}
}

// run lists every catalogue image's tags and rewrites file with them,
// only once every registry has answered.
func run(ctx context.Context, file string, now time.Time) error {
	old, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	images, err := model.ParseCatalogue(bytes.NewReader(old))
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	for i, img := range images {
		tags, err := listTags(ctx, img.Name)
		if err != nil {
			return fmt.Errorf("%s: %w (the registries must be reachable; %s is unchanged)", img.Name, err, file)
		}
		images[i].Tags = tags
	}
	var buf bytes.Buffer
	provenance := []string{"", fmt.Sprintf("Made by `go run ./hack/imagetags` on %s from the registries' tag lists.", now.UTC().Format("2006-01-02"))}
	if err := model.WriteCatalogue(&buf, provenance, images); err != nil {
		return err
	}
	return writeFile(file, buf.Bytes())
}

// listTags returns the tags repo's registry lists, without the sha256-…
// tags that signing and attestation tools push beside the images.
func listTags(ctx context.Context, repo string) ([]string, error) {
	r, err := name.NewRepository(repo)
	if err != nil {
		return nil, err
	}
	tags, err := remote.List(r, remote.WithContext(ctx))
	if err != nil {
		return nil, err
	}
	out := tags[:0]
	for _, t := range tags {
		if !strings.HasPrefix(t, "sha256-") {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("the registry lists no tags")
	}
	return out, nil
}

// writeFile replaces file with b through a temporary file beside it.
func writeFile(file string, b []byte) error {
	tmp := file + ".new"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}

// oneLine folds a multi-line error into one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
