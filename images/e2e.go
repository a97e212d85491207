package images

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// E2ERegistry is the registry the conformance suite pulls its images from
// (k8s.io/kubernetes/test/utils/image's promoter registry).
const E2ERegistry = "registry.k8s.io"

// The conformance suite's images for Kubernetes v1.36.3 that BuildE2E
// makes, under the names its image manifest (test/utils/image/manifest.go)
// gives them.
const (
	Agnhost     = E2ERegistry + "/e2e-test-images/agnhost:2.63.0"
	AgnhostPrev = E2ERegistry + "/e2e-test-images/agnhost:2.55"
	E2EBusybox  = E2ERegistry + "/e2e-test-images/busybox:1.37.0-1"
	Kitten      = E2ERegistry + "/e2e-test-images/kitten:1.8"
	Nautilus    = E2ERegistry + "/e2e-test-images/nautilus:1.8"
	Nginx       = E2ERegistry + "/e2e-test-images/nginx:1.15-4"
	E2EPause    = E2ERegistry + "/pause:3.10.2"
	Nonewprivs  = E2ERegistry + "/e2e-test-images/nonewprivs:1.4"
	// GlibcDNSTesting is made only when the host has hostTools.
	GlibcDNSTesting = E2ERegistry + "/e2e-test-images/glibc-dns-testing:2.0.0"
)

// hostTools are the host's programs (Debian's bind9-dnsutils, libc-bin,
// curl and netcat-openbsd) that the DNS, Services and session-affinity
// specs run in agnhost and glibc-dns-testing pods, as upstream's Alpine
// and Debian images have them; BuildE2E copies them with their shared
// libraries when the host has all of them. OpenBSD's nc also answers to
// nc (busybox's has no -u, -v or -z), and dash is /bin/sh: Debian's
// busybox-static sh runs its own applets before any program on PATH
// (FEATURE_SH_STANDALONE), so `sh -c '... | nc -v ...'` would never reach
// OpenBSD's nc; Alpine's ash (upstream's agnhost) and Debian's dash
// (upstream's glibc-dns-testing) look PATH up.
var hostTools = []string{"/usr/bin/dig", "/usr/bin/getent", "/usr/bin/curl", "/usr/bin/nc.openbsd", "/usr/bin/dash"}

// The main packages of agnhost and nonewprivs in the Kubernetes module.
const (
	agnhostPkg    = "k8s.io/kubernetes/test/images/agnhost"
	nonewprivsPkg = "k8s.io/kubernetes/test/images/nonewprivs"
)

// The module agnhost is built in: k8s.io/kubernetes v1.36.3 with its
// staging modules, as `go mod tidy` resolved them for agnhost alone. (Not
// named go.mod, so that images/agnhost stays a directory of this module.)
var (
	//go:embed agnhost/go.mod.txt
	agnhostMod []byte
	//go:embed agnhost/go.sum.txt
	agnhostSum []byte
)

// upstreamFiles are the data files of upstream's images that podtrace's
// builds carry, read from the release's module (k8s.io/kubernetes) at the
// version agnhost is built from: the TLS certificate and key upstream's
// agnhost image keeps in / (test/images/agnhost/porter's; StatefulSet
// specs probe /localhost.crt over HTTP through test-webserver, HTTPS
// lifecycle hooks serve with them), and the Update Demo's pictures and
// data.json (test/images/kitten/html and test/images/nautilus/html).
const (
	localhostCrt = "test/images/agnhost/porter/localhost.crt"
	localhostKey = "test/images/agnhost/porter/localhost.key"
	kittenDir    = "test/images/kitten/html/"
	nautilusDir  = "test/images/nautilus/html/"
)

var upstreamFiles = []string{localhostCrt, localhostKey,
	kittenDir + "kitten.jpg", kittenDir + "data.json", nautilusDir + "nautilus.jpg", nautilusDir + "data.json"}

// BuildE2E makes the conformance suite's images that need no compile of
// their own beyond agnhost (docs/conformance.md says what each is made of
// and what the stand-ins lack). agnhost is compiled from k8s.io/kubernetes'
// own test/images/agnhost (the first build takes minutes; it is cached in
// cfg.CacheDir) and is also the program of agnhost 2.55, kitten and
// nautilus; nonewprivs is compiled from the same module; the pause
// image's program is podtrace's own. When the host has
// hostTools, they go under the agnhost-based images and make
// glibc-dns-testing. BuildAggregator makes the aggregator spec's images,
// which take minutes more to compile.
func BuildE2E(ctx context.Context, cfg Config) ([]Built, error) {
	k8sModule := map[string][]byte{"go.mod": agnhostMod, "go.sum": agnhostSum}
	agnhost, err := compileModule(ctx, cfg, "agnhost", k8sModule, agnhostPkg)
	if err != nil {
		return nil, err
	}
	nnp, err := compileModule(ctx, cfg, "nonewprivs", k8sModule, nonewprivsPkg)
	if err != nil {
		return nil, err
	}
	upstream, err := moduleFiles(ctx, cfg, k8sModule, "k8s.io/kubernetes", upstreamFiles...)
	if err != nil {
		return nil, err
	}
	pause, err := compile(ctx, cfg, "pause", pauseSrc)
	if err != nil {
		return nil, err
	}
	bb, err := readBusybox(cfg)
	if err != nil {
		return nil, fmt.Errorf("build %s: %w", E2EBusybox, err)
	}
	tools, err := hostToolFiles(ctx)
	if err != nil {
		return nil, fmt.Errorf("build %s: %w", GlibcDNSTesting, err)
	}
	return e2eImages(e2eParts{agnhost: agnhost, nnp: nnp, pause: pause, busybox: bb, applets: allApplets(cfg), tools: tools, upstream: upstream})
}

// hostToolFiles are hostTools' files, or none when the host lacks one.
func hostToolFiles(ctx context.Context) ([]File, error) {
	for _, p := range hostTools {
		if _, err := os.Stat(p); err != nil {
			return nil, nil
		}
	}
	files, err := hostPrograms(ctx, hostTools...)
	if err != nil {
		return nil, err
	}
	return append(files, File{Path: "/usr/bin/nc", Link: "nc.openbsd"}, File{Path: "/bin/nc", Link: "/usr/bin/nc.openbsd"},
		File{Path: "/bin/sh", Link: "/usr/bin/dash"},
		File{Path: "/etc/nsswitch.conf", Mode: 0o644, Data: []byte("hosts: files dns\n")}), nil
}

// e2eParts are the programs BuildE2E's images are made of.
type e2eParts struct {
	agnhost, nnp, pause, busybox []byte
	applets                      []string          // busybox's commands to link in /bin
	tools                        []File            // hostTools and their libraries; none without them
	upstream                     map[string][]byte // upstreamFiles' contents by path
}

// e2eImage is one image to make: its layers, bottom first, and config.
type e2eImage struct {
	ref    string
	layers []v1.Layer
	cfg    v1.Config
}

// agnhostPorts are the ports upstream's agnhost image exposes.
var agnhostPorts = map[string]struct{}{"80/tcp": {}, "8080/tcp": {}, "8081/tcp": {}, "9376/tcp": {}, "5000/tcp": {}}

// e2eImages makes BuildE2E's images of p. Images that share a base share
// its layer: busybox's under every image, the host's tools under the
// agnhost-based images and glibc-dns-testing, agnhost's under kitten and
// nautilus.
func e2eImages(p e2eParts) ([]Built, error) {
	files := map[string][]File{
		"busybox":  append(baseFiles(), busyboxFiles(p.busybox, p.applets)...),
		"agnhost":  p.agnhostFiles(),
		"kitten":   p.webFiles(kittenDir, "kitten.jpg", "data.json"),
		"nautilus": p.webFiles(nautilusDir, "nautilus.jpg", "data.json"),
		"nginx":    nginxFiles(),
		// Set-user-ID root, as upstream's (`chmod +s`): the
		// allowPrivilegeEscalation specs read the effective uid it prints.
		"nonewprivs": {{Path: "/usr/local/bin/nnp", Mode: 0o4755, Data: p.nnp}},
		"pause":      append(baseFiles(), File{Path: "/pause", Mode: 0o755, Data: p.pause}),
	}
	if p.tools != nil {
		files["tools"] = p.tools
	}
	layers, err := layersOf(files)
	if err != nil {
		return nil, err
	}
	bb, base := layers["busybox"], []v1.Layer{layers["busybox"]}
	if p.tools != nil {
		base = append(base, layers["tools"])
	}
	on := func(top ...string) []v1.Layer { // base, then the named layers
		out := slices.Clone(base)
		for _, t := range top {
			out = append(out, layers[t])
		}
		return out
	}
	agnhostCfg := v1.Config{Entrypoint: []string{"/agnhost"}, Cmd: []string{"pause"}, ExposedPorts: agnhostPorts}
	webserver := agnhostCfg
	webserver.Cmd = []string{"test-webserver"}
	specs := []e2eImage{
		{Agnhost, on("agnhost"), agnhostCfg},
		{AgnhostPrev, on("agnhost"), agnhostCfg},
		{Kitten, on("agnhost", "kitten"), webserver},
		{Nautilus, on("agnhost", "nautilus"), webserver},
		{E2EBusybox, []v1.Layer{bb}, v1.Config{Cmd: []string{"sh"}}},
		{Nginx, []v1.Layer{bb, layers["nginx"]}, v1.Config{Cmd: []string{"nginx", "-g", "daemon off;"},
			ExposedPorts: map[string]struct{}{"80/tcp": {}}, StopSignal: "SIGTERM"}},
		{E2EPause, []v1.Layer{layers["pause"]}, v1.Config{Entrypoint: []string{"/pause"}, User: "65535:65535"}},
		{Nonewprivs, []v1.Layer{bb, layers["nonewprivs"]}, v1.Config{Cmd: []string{"nnp"}}},
	}
	if p.tools != nil {
		specs = append(specs, e2eImage{GlibcDNSTesting, base, v1.Config{Cmd: []string{"sh"}}})
	}
	return makeImages(specs)
}

// layersOf makes a layer of each named list of files.
func layersOf(files map[string][]File) (map[string]v1.Layer, error) {
	out := make(map[string]v1.Layer, len(files))
	for name, f := range files {
		l, err := Layer(f)
		if err != nil {
			return nil, fmt.Errorf("build the %s layer: %w", name, err)
		}
		out[name] = l
	}
	return out, nil
}

// makeImages makes each image, labelled with its name so that no two
// names share an image ID (containerd would report either name for it).
func makeImages(specs []e2eImage) ([]Built, error) {
	out := make([]Built, 0, len(specs))
	for _, s := range specs {
		cfg := s.cfg
		cfg.Labels = map[string]string{"dev.podtrace.image": s.ref}
		img, err := LayeredImage(s.layers, cfg)
		if err != nil {
			return nil, fmt.Errorf("build %s: %w", s.ref, err)
		}
		out = append(out, Built{Ref: s.ref, Image: img})
	}
	return out, nil
}

// agnhostFiles are what upstream's agnhost image adds to its base, on
// busybox rather than Alpine: /agnhost and the /agnhost-2 link, /uploads,
// /localhost.crt and /localhost.key, the user and group upstream's image
// defines (a SupplementalGroups spec reads them), and an os-release that
// says what the base is.
func (p e2eParts) agnhostFiles() []File {
	var passwd, group []byte
	for _, f := range baseFiles() {
		switch f.Path {
		case "/etc/passwd":
			passwd = append(bytes.Clone(f.Data), "user-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh\n"...)
		case "/etc/group":
			group = append(bytes.Clone(f.Data), "user-defined-in-image:x:1000:\ngroup-defined-in-image:x:50000:user-defined-in-image\n"...)
		}
	}
	return []File{
		{Path: "/etc/passwd", Mode: 0o644, Data: passwd},
		{Path: "/etc/group", Mode: 0o644, Data: group},
		{Path: "/etc/os-release", Mode: 0o644, Data: []byte(osRelease)},
		{Path: "/agnhost", Mode: 0o755, Data: p.agnhost},
		{Path: "/agnhost-2", Link: "agnhost"},
		{Path: "/uploads", Dir: true, Mode: 0o755},
		{Path: "/localhost.crt", Mode: 0o644, Data: p.upstream[localhostCrt]},
		{Path: "/localhost.key", Mode: 0o644, Data: p.upstream[localhostKey]},
	}
}

// webFiles are the files of upstream's image directory dir (one of
// upstreamFiles' directories) that its Dockerfile adds to /.
func (p e2eParts) webFiles(dir string, names ...string) []File {
	files := make([]File, len(names))
	for i, n := range names {
		files[i] = File{Path: "/" + n, Mode: 0o644, Data: p.upstream[dir+n]}
	}
	return files
}

// osRelease is the agnhost-based images' /etc/os-release. Upstream's are
// Alpine Linux; the ImageVolume spec reads this file from kitten.
const osRelease = `NAME="BusyBox"
ID=busybox
PRETTY_NAME="BusyBox, standing in for Alpine Linux (podtrace's build of a Kubernetes e2e test image)"
`

// nginxFiles make the nginx stand-in: an nginx command that runs
// busybox's httpd in the foreground on port 80, serving
// /usr/share/nginx/html (where upstream's nginx image keeps its page).
func nginxFiles() []File {
	return []File{
		{Path: "/usr/sbin/nginx", Mode: 0o755, Data: []byte(nginxScript)},
		{Path: "/usr/share/nginx/html/index.html", Mode: 0o644, Data: []byte(nginxIndex)},
	}
}

// nginxScript stands in for nginx's command line: `nginx -g 'daemon
// off;'` serves, `nginx -s quit|stop` stops it, `nginx -v` and `-t` answer.
const nginxScript = `#!/bin/sh
# podtrace's stand-in for nginx: busybox httpd on port 80.
case "$1" in
-s) exec killall httpd ;;
-v|-V) echo "nginx version: nginx/1.15 (podtrace stand-in: busybox httpd)" >&2; exit 0 ;;
-t) exit 0 ;;
esac
exec httpd -f -p 80 -h /usr/share/nginx/html
`

const nginxIndex = `<!DOCTYPE html>
<html>
<head><title>Welcome to nginx!</title></head>
<body><h1>Welcome to nginx!</h1>
<p>podtrace's stand-in for registry.k8s.io/e2e-test-images/nginx: busybox httpd.</p>
</body>
</html>
`

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
		return append(slices.Clone(applets), "httpd", "killall") // the nginx stand-in's
	}
	var list []string
	for _, a := range strings.Fields(string(out)) {
		if a != "busybox" && !strings.Contains(a, "/") {
			list = append(list, a)
		}
	}
	return list
}
