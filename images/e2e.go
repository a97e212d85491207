package images

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// E2ERegistry is the registry the conformance suite pulls its images from
// (k8s.io/kubernetes/test/utils/image's promoter registry).
const E2ERegistry = "registry.k8s.io"

// The conformance suite's images for Kubernetes v1.36.3, under the names
// its image manifest (test/utils/image/manifest.go) gives them.
const (
	Agnhost    = E2ERegistry + "/e2e-test-images/agnhost:2.63.0"
	E2EBusybox = E2ERegistry + "/e2e-test-images/busybox:1.37.0-1"
)

// agnhostPkg is agnhost's main package in the Kubernetes module.
const agnhostPkg = "k8s.io/kubernetes/test/images/agnhost"

// The module agnhost is built in: k8s.io/kubernetes v1.36.3 with its
// staging modules, as `go mod tidy` resolved them for agnhost alone. (Not
// named go.mod, so that images/agnhost stays a directory of this module.)
var (
	//go:embed agnhost/go.mod.txt
	agnhostMod []byte
	//go:embed agnhost/go.sum.txt
	agnhostSum []byte
)

// BuildE2E makes the conformance suite's agnhost and busybox images.
// agnhost is compiled from k8s.io/kubernetes' own test/images/agnhost (the
// first build takes minutes; it is cached in cfg.CacheDir), on busybox
// rather than upstream's Alpine: its shell and tools, /agnhost and the
// /agnhost-2 link, /uploads, and the user and group upstream's image
// defines, with upstream's entrypoint (agnhost pause).
func BuildE2E(ctx context.Context, cfg Config) ([]Built, error) {
	bin, err := compileModule(ctx, cfg, "agnhost", map[string][]byte{"go.mod": agnhostMod, "go.sum": agnhostSum}, agnhostPkg)
	if err != nil {
		return nil, err
	}
	bb, err := readBusybox(cfg)
	if err != nil {
		return nil, fmt.Errorf("build %s: %w", E2EBusybox, err)
	}
	tools := busyboxFiles(bb, allApplets(cfg))
	agnhost := append(e2eBaseFiles(), tools...)
	agnhost = append(agnhost, File{Path: "/agnhost", Mode: 0o755, Data: bin}, File{Path: "/agnhost-2", Link: "agnhost"},
		File{Path: "/uploads", Dir: true, Mode: 0o755})
	var out []Built
	for _, s := range []struct {
		ref   string
		files []File
		cfg   v1.Config
	}{
		{Agnhost, agnhost, v1.Config{Entrypoint: []string{"/agnhost"}, Cmd: []string{"pause"},
			ExposedPorts: map[string]struct{}{"80/tcp": {}, "8080/tcp": {}, "8081/tcp": {}, "9376/tcp": {}, "5000/tcp": {}}}},
		{E2EBusybox, append(baseFiles(), tools...), v1.Config{Cmd: []string{"sh"}}},
	} {
		img, err := Image(s.files, s.cfg)
		if err != nil {
			return nil, fmt.Errorf("build %s: %w", s.ref, err)
		}
		out = append(out, Built{Ref: s.ref, Image: img})
	}
	return out, nil
}

// e2eBaseFiles are baseFiles with the user and group upstream's agnhost
// image defines (a SupplementalGroups spec reads them).
func e2eBaseFiles() []File {
	files := baseFiles()
	for i, f := range files {
		switch f.Path {
		case "/etc/passwd":
			files[i].Data = append(bytes.Clone(f.Data), "user-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh\n"...)
		case "/etc/group":
			files[i].Data = append(bytes.Clone(f.Data), "user-defined-in-image:x:1000:\ngroup-defined-in-image:x:50000:user-defined-in-image\n"...)
		}
	}
	return files
}

// readBusybox reads the static busybox binary cfg names.
func readBusybox(cfg Config) ([]byte, error) {
	path := cfg.Busybox
	if path == "" {
		path = "/bin/busybox"
	}
	bb, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w (install busybox-static)", err)
	}
	return bb, nil
}

// allApplets is every command the busybox binary has (`busybox --list`),
// for the suite's shell scripts (awk, sed, nslookup, ...); applets when it
// cannot be asked.
func allApplets(cfg Config) []string {
	path := cfg.Busybox
	if path == "" {
		path = "/bin/busybox"
	}
	out, err := exec.Command(path, "--list").Output()
	if err != nil {
		return applets
	}
	var list []string
	for _, a := range strings.Fields(string(out)) {
		if a != "busybox" && !strings.Contains(a, "/") {
			list = append(list, a)
		}
	}
	return list
}
