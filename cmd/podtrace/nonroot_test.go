//go:build linux

package main

import (
	"bytes"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/podtrace/podtrace/internal/podtracebin"
)

// TestNonRootUserRunsPodsAsOtherUsers runs `podtrace run --headless` as a
// user who is not root but has subordinate IDs in /etc/subuid and
// /etc/subgid (PODTRACE_NONROOT_USER; .ci/run makes one), as on a laptop
// with rootless Podman set up: a pod with a runAsUser and an fsGroup
// becomes Ready, as it does under root. (With only the user's own ID
// mapped, the kubelet's chown of its service account token fails and the
// pod never starts, as a newuidmap that refuses shows.)
func TestNonRootUserRunsPodsAsOtherUsers(t *testing.T) {
	name := os.Getenv("PODTRACE_NONROOT_USER")
	if name == "" || os.Getuid() != 0 {
		t.Skip("needs root and PODTRACE_NONROOT_USER, a user with subordinate IDs (.ci/run makes one)")
	}
	t.Parallel() // its clusters run in user and network namespaces of their own
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	bin := podtracebin.Path(t) // any user may run it
	home := t.TempDir()
	manifest := filepath.Join(home, "pod.yaml")
	if err := os.WriteFile(manifest, []byte(`apiVersion: v1
kind: Pod
metadata:
  name: nonroot
spec:
  securityContext: {runAsUser: 1000, runAsGroup: 2000, runAsNonRoot: true, fsGroup: 2000}
  containers:
  - name: app
    image: nginx:1.27
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{home, filepath.Dir(home)} {
		if err := os.Chown(d, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	runAs := func(path, timeout, data string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
		cmd := exec.Command(bin, "run", "--headless", "-f", manifest, "--timeout", timeout, "--data-dir", filepath.Join(home, data))
		cmd.Dir = home
		cmd.Env = []string{"HOME=" + home, "PATH=" + path}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		return cmd, &out, &errOut
	}

	// When newuidmap refuses (here a stand-in on PATH that fails), podtrace
	// says so in one line and runs with the user's ID alone: the pod never
	// becomes Ready. (That run waits for its --timeout to pass: the other
	// run, on a data dir of its own, goes meanwhile.)
	refusing := filepath.Join(home, "refusing")
	if err := os.MkdirAll(refusing, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(refusing, "newuidmap"), []byte("#!/bin/sh\necho refused >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	refused, _, refusedErr := runAs(refusing+":"+os.Getenv("PATH"), "20s", "refused")
	if err := refused.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := refused.Wait(); err == nil {
			t.Error("with newuidmap refusing, the pod running as user 1000 became Ready")
		}
		if want := "podtrace: newuidmap: exit status 1: refused; pods that run as another user will not start"; !strings.Contains(refusedErr.String(), want) {
			t.Errorf("stderr %q, want the line %q", refusedErr.String(), want)
		}
	}()

	cmd, out, errOut := runAs(os.Getenv("PATH"), "90s", "data")
	if err := cmd.Run(); err != nil {
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		t.Fatalf("podtrace run as %s: %v\n%s\nlast events:\n%s", name, err, errOut.String(),
			strings.Join(lines[max(0, len(lines)-3):], "\n"))
	}
	if !strings.Contains(out.String(), `"pod":"nonroot"`) || !strings.Contains(out.String(), `"stage":"ready","status":"succeeded"`) {
		t.Fatalf("no ready stage for the pod:\n%s", out.String())
	}
}
