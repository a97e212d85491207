package images

import (
	"context"
	_ "embed"
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// The images of the conformance suite's aggregator spec ("Should be able
// to support the 1.17 Sample API Server using the current Aggregator"),
// under the names test/utils/image/manifest.go gives them.
const (
	SampleAPIServer = E2ERegistry + "/e2e-test-images/sample-apiserver:1.29.2"
	Etcd            = E2ERegistry + "/etcd:3.6.8-0"
)

// The main packages BuildAggregator compiles.
const (
	sampleAPIServerPkg = "k8s.io/sample-apiserver"
	etcdPkg            = "go.etcd.io/etcd/server/v3"
)

// The module both are built in: k8s.io/sample-apiserver v0.36.3 (the
// pinned release's staging module) and go.etcd.io/etcd/server/v3 v3.6.8
// (the etcd the manifest names), as `go mod tidy` resolved them.
var (
	//go:embed aggregator/go.mod.txt
	aggregatorMod []byte
	//go:embed aggregator/go.sum.txt
	aggregatorSum []byte
)

// BuildAggregator makes the aggregator spec's images: sample-apiserver
// and etcd compiled from source, each on busybox. The first build
// compiles both (minutes on two cores; cached in cfg.CacheDir afterwards),
// which is why it is apart from BuildE2E.
func BuildAggregator(ctx context.Context, cfg Config) ([]Built, error) {
	files := map[string][]byte{"go.mod": aggregatorMod, "go.sum": aggregatorSum}
	sample, err := compileModule(ctx, cfg, "sample-apiserver", files, sampleAPIServerPkg)
	if err != nil {
		return nil, err
	}
	etcd, err := compileModule(ctx, cfg, "etcd", files, etcdPkg)
	if err != nil {
		return nil, err
	}
	bb, err := readBusybox(cfg)
	if err != nil {
		return nil, fmt.Errorf("build %s: %w", SampleAPIServer, err)
	}
	return aggregatorImages(sample, etcd, bb, allApplets(cfg))
}

// aggregatorImages makes the sample-apiserver and etcd images of their
// programs on a busybox layer (upstream's are on Alpine and distroless),
// with upstream's entrypoint and exposed ports.
func aggregatorImages(sample, etcd, busybox []byte, applets []string) ([]Built, error) {
	layers, err := layersOf(map[string][]File{
		"busybox":          append(baseFiles(), busyboxFiles(busybox, applets)...),
		"sample-apiserver": {{Path: "/sample-apiserver", Mode: 0o755, Data: sample}},
		"etcd":             {{Path: "/usr/local/bin/etcd", Mode: 0o755, Data: etcd}},
	})
	if err != nil {
		return nil, err
	}
	bb := layers["busybox"]
	return makeImages([]e2eImage{
		{SampleAPIServer, []v1.Layer{bb, layers["sample-apiserver"]}, v1.Config{Entrypoint: []string{"/sample-apiserver"}}},
		{Etcd, []v1.Layer{bb, layers["etcd"]}, v1.Config{
			ExposedPorts: map[string]struct{}{"2379/tcp": {}, "2380/tcp": {}, "4001/tcp": {}, "7001/tcp": {}}}},
	})
}
