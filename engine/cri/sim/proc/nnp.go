package proc

import (
	"fmt"
	"io"
)

// nnp is the program of Kubernetes' e2e image nonewprivs
// (k8s.io/kubernetes test/images/nonewprivs, /usr/local/bin/nnp, owned by
// root and set-user-ID): it prints its effective user ID. Executed, it runs
// as root unless no_new_privs is set (allowPrivilegeEscalation: false),
// which makes exec ignore the set-user-ID bit: then it keeps the
// container's user.
func nnp(stdout io.Writer, sec Security, uid int64) {
	euid := int64(0)
	if sec.NoNewPrivs {
		euid = uid
	}
	fmt.Fprintf(stdout, "Effective uid: %d\n", euid)
}
