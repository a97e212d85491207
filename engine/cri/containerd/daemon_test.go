package containerd

import (
	"context"
	"os"
	"testing"

	"github.com/containerd/containerd/v2/client"
)

func TestStartDaemon(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("PODTRACE_REAL_CONTAINERS") == "1" {
			t.Fatal("PODTRACE_REAL_CONTAINERS=1 (.ci/run) but not root: these tests must run")
		}
		t.Skip("containerd needs root")
	}
	ctx := context.Background()
	d, err := StartDaemon(ctx, "", t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	c, err := client.New(d.Address)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	v, err := c.Version(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v.Version == "" {
		t.Fatal("empty version")
	}
	t.Logf("containerd %s", v.Version)
}
