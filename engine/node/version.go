package node

import (
	"strings"
	"sync/atomic"
	_ "unsafe" // for go:linkname

	_ "k8s.io/component-base/version" // the variables below

	"github.com/podtrace/podtrace/version"
)

// The kubelet reports component-base's version in its Node's nodeInfo.
// Release builds set it with -ldflags "-X k8s.io/component-base/version.gitVersion=...";
// a plain `go build` or `go run` leaves upstream's placeholder
// (v0.0.0-master+$Format:%H$), which is not a version any real node
// reports. Then it is set to the release podtrace builds on, as ldflags
// would set it.
var (
	//go:linkname gitVersion k8s.io/component-base/version.gitVersion
	gitVersion string
	//go:linkname gitMajor k8s.io/component-base/version.gitMajor
	gitMajor string
	//go:linkname gitMinor k8s.io/component-base/version.gitMinor
	gitMinor string
	//go:linkname dynamicGitVersion k8s.io/component-base/version.dynamicGitVersion
	dynamicGitVersion atomic.Value
)

func init() {
	if strings.HasPrefix(gitVersion, "v0.0.0-master") {
		gitVersion = version.Kubernetes
		gitMajor, gitMinor = version.KubernetesMajorMinor()
		dynamicGitVersion.Store(gitVersion)
	}
}
