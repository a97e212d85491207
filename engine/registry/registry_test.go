package registry

import (
	"context"
	"net/http"
	"testing"
)

func TestStartServesV2OnLoopbackOnly(t *testing.T) {
	ctx := context.Background()
	if _, err := Start(ctx, Config{Addr: "0.0.0.0:0"}); err == nil {
		t.Fatal("a non-loopback address was accepted")
	}
	r, err := Start(ctx, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	resp, err := http.Get("http://" + r.Host + "/v2/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v2/ = %d", resp.StatusCode)
	}
	resp, err = http.Get("http://" + r.Host + "/v2/podtrace.dev/nope/manifests/1.0")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("missing manifest = %d, want 404", resp.StatusCode)
	}
	if r.Requests() != 2 {
		t.Fatalf("Requests() = %d, want 2", r.Requests())
	}
}
