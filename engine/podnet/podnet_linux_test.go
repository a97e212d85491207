package podnet

import (
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// TestAddRange runs itself again in a namespace of its own (as Reexec
// runs podtrace): a pod range added there is local, so any of its
// addresses binds and answers, yet it is not one of the interfaces'
// addresses that every kubelet lists; a node's single address is.
func TestAddRange(t *testing.T) {
	if !Inside() {
		cmd := exec.Command(os.Args[0], "-test.run=^TestAddRange$", "-test.v")
		cmd.Env = append(os.Environ(), envChild+"="+noListener)
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET}
		idMaps(cmd.SysProcAttr, os.Getuid(), os.Getgid())
		out, err := cmd.CombinedOutput()
		if err != nil && strings.Contains(string(out), "--- FAIL") {
			t.Fatalf("inside the namespace:\n%s", out)
		}
		if err != nil {
			t.Skipf("no namespace here: %v\n%s", err, out)
		}
		if !strings.Contains(string(out), "--- PASS: TestAddRange") {
			t.Fatalf("the run inside the namespace did not pass:\n%s", out)
		}
		return
	}
	if err := Setup(); err != nil {
		t.Fatal(err)
	}
	for _, cidr := range []string{"10.244.1.0/24", "10.244.1.0/24", "172.18.0.2/32"} { // twice: idempotent
		if err := AddRange(cidr); err != nil {
			t.Fatalf("AddRange(%s): %v", cidr, err)
		}
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, a := range addrs {
		listed = append(listed, a.String())
	}
	got := strings.Join(listed, " ")
	if !strings.Contains(got, "172.18.0.2/32") || strings.Contains(got, "10.244.") {
		t.Errorf("interface addresses %q: want the node's 172.18.0.2/32 and no pod range", got)
	}
	ln, err := net.Listen("tcp", "10.244.1.7:80")
	if err != nil {
		t.Fatalf("a pod IP of the range does not bind: %v", err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", "10.244.1.7:80")
	if err != nil {
		t.Fatalf("a pod IP of the range does not answer: %v", err)
	}
	defer c.Close()
	// The source a dialer gets, as with an address of the range on lo.
	if src := c.LocalAddr().(*net.TCPAddr).IP.String(); src != "10.244.1.0" {
		t.Errorf("a connection to the pod comes from %s, want 10.244.1.0", src)
	}
	if _, err := net.Listen("tcp", "10.244.2.7:80"); err == nil {
		t.Error("an address outside every added range binds")
	}
}
