// Package version holds the one copy of the Kubernetes release podtrace
// pins and podtrace's own version. It imports the standard library only, so
// any package of the project may use it.
package version

import (
	"runtime/debug"
	"strings"
)

// Kubernetes is the Kubernetes release podtrace speaks for: the reasons,
// messages and API behaviour it reproduces, the version its API server and
// kubelets report, and the k8s.io modules it builds on (v0.36.3).
const Kubernetes = "v1.36.3"

// Podtrace is podtrace's own version. Release builds set it with
//
//	go build -ldflags "-X github.com/podtrace/podtrace/version.Podtrace=v0.4.0" ./cmd/podtrace
//
// Else it is the module version the Go toolchain recorded: the tag of a
// `go install github.com/podtrace/podtrace/cmd/podtrace@v0.4.0`, or the
// pseudo-version of the commit a checkout's `go build` stamps; else (test
// binaries, -buildvcs=false) "dev".
var Podtrace = "dev"

func init() {
	if Podtrace != "dev" {
		return
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		Podtrace = bi.Main.Version
	}
}

// KubernetesMajorMinor returns Kubernetes' major and minor numbers ("1",
// "36"), as /version reports them.
func KubernetesMajorMinor() (major, minor string) {
	major, rest, _ := strings.Cut(strings.TrimPrefix(Kubernetes, "v"), ".")
	minor, _, _ = strings.Cut(rest, ".")
	return major, minor
}
