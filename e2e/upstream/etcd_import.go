//go:build tools

package upstream

import (
	_ "go.etcd.io/etcd/server/v3/embed"
)
