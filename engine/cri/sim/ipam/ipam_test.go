package ipam

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

func TestAllocateAndExhaust(t *testing.T) {
	ctx := context.Background()
	pl, err := New("10.244.1.0/29")
	if err != nil {
		t.Fatal(err)
	}
	if got := pl.RangeSet(); got != "10.244.1.1-10.244.1.6" {
		t.Fatalf("range set %s", got)
	}
	var ips []string
	for i := 0; i < 5; i++ {
		r, err := pl.SetUp(ctx, Pod{SandboxID: fmt.Sprint("sb", i)})
		if err != nil {
			t.Fatalf("SetUp %d: %v", i, err)
		}
		ips = append(ips, r.IP)
	}
	if strings.Join(ips, ",") != "10.244.1.2,10.244.1.3,10.244.1.4,10.244.1.5,10.244.1.6" {
		t.Fatalf("ips %v", ips)
	}
	_, err = pl.SetUp(ctx, Pod{SandboxID: "sb9"})
	want := `plugin type="bridge" name="podtrace" failed (add): failed to allocate for range 0: no IP addresses available in range set: 10.244.1.1-10.244.1.6`
	if err == nil || err.Error() != want {
		t.Fatalf("exhausted: got %v\nwant %s", err, want)
	}
	if err := pl.TearDown(ctx, Pod{SandboxID: "sb2"}); err != nil {
		t.Fatal(err)
	}
	r, err := pl.SetUp(ctx, Pod{SandboxID: "sb9"})
	if err != nil || r.IP != "10.244.1.4" {
		t.Fatalf("after release: %v %v", r, err)
	}
	if pl.InUse() != 5 {
		t.Fatalf("in use %d", pl.InUse())
	}
}

func TestBadCIDR(t *testing.T) {
	if _, err := New("10.0.0.0/31"); err == nil {
		t.Fatal("want error for /31")
	}
	if _, err := New("nope"); err == nil {
		t.Fatal("want error")
	}
}
