package node

import (
	"os"

	"k8s.io/kubernetes/pkg/volume/util/hostutil"
)

// hostUtil is kubemark's fake host utilities, except that it reads the
// mode of a path for real: the kubelet reads it to make a subPathExpr
// directory inside a volume, which lives in the kubelet's real root
// directory (the fake's "not implemented" failed such containers).
type hostUtil struct{ *hostutil.FakeHostUtil }

// GetMode returns the permissions of path.
func (hostUtil) GetMode(path string) (os.FileMode, error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return st.Mode(), nil
}
