package sim

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podtrace/podtrace/engine/cri"
	"github.com/podtrace/podtrace/internal/waittest"
)

// A pod answers "ok" on its declared port until its container's program
// listens there: agnhost netexec, started by its image's entrypoint, then
// answers as agnhost does, on the port it declared, on the host port
// mapped to it, and on its UDP port, which the pod did not declare; when
// it stops, nothing answers.
func TestContainerProgramListensOnThePodAddress(t *testing.T) {
	ctx := context.Background()
	r, err := New(Config{Node: "node-1", PodCIDR: "10.244.9.0/24", Seed: 1, Speed: func() float64 { return cri.MaxSpeed }})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Shutdown(ctx) //nolint:errcheck
	image := &runtimeapi.ImageSpec{Image: "registry.k8s.io/e2e-test-images/agnhost:2.55"}
	if _, err := r.PullImage(ctx, image, nil, nil); err != nil {
		t.Fatal(err)
	}
	free, err := net.Listen("tcp", "127.0.0.1:0") // a free port for the host port
	if err != nil {
		t.Fatal(err)
	}
	hostPort := free.Addr().(*net.TCPAddr).Port
	free.Close()
	sb := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "backend", Namespace: "default", Uid: "u1"},
		Hostname: "backend-1", LogDirectory: t.TempDir(), PortMappings: []*runtimeapi.PortMapping{
			{ContainerPort: 8080, HostPort: int32(hostPort), HostIp: "127.0.0.1"}}}
	sandbox, err := r.RunPodSandbox(ctx, sb, "")
	if err != nil {
		t.Fatal(err)
	}
	st, err := r.PodSandboxStatus(ctx, sandbox, false)
	if err != nil {
		t.Fatal(err)
	}
	ip := st.GetStatus().GetNetwork().GetIp()
	// Host ports are served in the pod network namespace only; the test
	// serves them on loopback as if it were in one.
	r.podIPs = true
	get := func(path string) (string, error) {
		return getFrom(net.JoinHostPort(ip, "8080"), path)
	}
	if got, err := get("/hostname"); err != nil || got != "ok\n" {
		t.Fatalf("before the container: %q, %v; want the pod's own ok", got, err)
	}
	id, err := r.CreateContainer(ctx, sandbox, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "netexec"},
		Image: image, Args: []string{"netexec", "--http-port=8080", "--udp-port=8081"}, LogPath: "netexec/0.log"}, sb)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	waittest.Eventually(t, "netexec's /hostname to answer backend-1", time.Minute, func() (bool, string) {
		got, _ := get("/hostname")
		log, _ := os.ReadFile(filepath.Join(sb.LogDirectory, "netexec/0.log"))
		return got == "backend-1", fmt.Sprintf("answered %q; its log:\n%s", got, log)
	})
	if got, err := getFrom(net.JoinHostPort("127.0.0.1", strconv.Itoa(hostPort)), "/hostname"); err != nil || got != "backend-1" {
		t.Errorf("host port %d: %q, %v; want backend-1", hostPort, got, err)
	}
	// netexec opens its UDP port after its HTTP one: ask until it answers.
	waittest.Eventually(t, "UDP hostname to answer backend-1", time.Minute, func() (bool, string) {
		got, err := udpAsk(net.JoinHostPort(ip, "8081"), "hostname")
		return got == "backend-1", fmt.Sprintf("%q, %v", got, err)
	})
	if err := r.StopContainer(ctx, id, 0); err != nil {
		t.Fatal(err)
	}
	waittest.Eventually(t, "port 8080 to stop answering once the container stopped", time.Minute, func() (bool, string) {
		got, err := get("/hostname")
		return err != nil, fmt.Sprintf("answers %q", got)
	})
}

// udpAsk sends msg to addr in one datagram and returns the answer.
func udpAsk(addr, msg string) (string, error) {
	conn, err := net.Dial("udp", addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(msg)); err != nil {
		return "", err
	}
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 100)
	n, err := conn.Read(buf)
	return string(buf[:n]), err
}

// getFrom GETs path from addr.
func getFrom(addr, path string) (string, error) {
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Get("http://" + addr + path)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}
