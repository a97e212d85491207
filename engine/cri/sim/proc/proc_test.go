package proc

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// container gives a test container a config volume (read-only, with one
// key) and an emptyDir (writable), as the kubelet mounts them.
func container(t *testing.T) *FS {
	dir := t.TempDir()
	config, data := filepath.Join(dir, "config"), filepath.Join(dir, "data")
	for _, d := range []string{config, data} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(config, "mode"), []byte("debug\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return NewFS([]Mount{{ContainerPath: "/etc/config", HostPath: config, ReadOnly: true}, {ContainerPath: "/data", HostPath: data}}, false)
}

func run(t *testing.T, fsys *FS, exec bool, argv ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errw bytes.Buffer
	var slept time.Duration
	code, err := Run(context.Background(), Process{Argv: argv, Env: []string{"GREETING=hello", "HOSTNAME=web-1"}, FS: fsys,
		Stdout: &out, Stderr: &errw, Exec: exec,
		Sleep: func(ctx context.Context, d time.Duration) error { slept += d; return nil }})
	if err != nil {
		t.Fatalf("%q: %v", argv, err)
	}
	return code, out.String(), errw.String()
}

func TestScripts(t *testing.T) {
	fsys := container(t)
	for _, tc := range []struct {
		argv           []string
		code           int
		stdout, stderr string
	}{
		{[]string{"sh", "-c", "echo $GREETING from $(hostname)"}, 0, "hello from web-1\n", ""},
		{[]string{"cat", "/etc/config/mode"}, 0, "debug\n", ""},
		// ConfigMap's binary data spec reads hexdump -C's line.
		{[]string{"sh", "-c", "printf '\\xde\\xca\\xfe\\xba\\xd0\\xfe\\xff' > /data/dump.bin; hexdump -C /data/dump.bin"}, 0,
			"00000000  de ca fe ba d0 fe ff                              |.......|\n00000007\n", ""},
		{[]string{"sh", "-c", "cat /etc/config/missing"}, 1, "", "cat: can't open '/etc/config/missing': No such file or directory\n"},
		{[]string{"sh", "-c", "echo x > /etc/config/mode"}, 1, "", "sh: can't create /etc/config/mode: Read-only file system\n"},
		{[]string{"sh", "-c", "cat < /nothere"}, 1, "", "sh: can't open '/nothere': No such file or directory\n"},
		{[]string{"sh", "-c", "echo ok > /tmp/healthy && cat /tmp/healthy"}, 0, "ok\n", ""},
		{[]string{"sh", "-c", "test -f /tmp/healthy"}, 0, "", ""}, // the previous process's file, in the same container
		{[]string{"sh", "-c", "rm /tmp/healthy; test -f /tmp/healthy"}, 1, "", ""},
		{[]string{"sh", "-c", "echo saved > /data/out; cat /data/out"}, 0, "saved\n", ""},
		{[]string{"sh", "-c", "ls /etc/config; ls /etc"}, 0, "mode\nconfig\n", ""},
		{[]string{"sh", "-c", "cd /tmp && echo hi > note && ls && pwd"}, 0, "note\n/tmp\n", ""},
		{[]string{"ls", "/"}, 0, "bin\ndata\ndev\netc\nhome\nproc\nroot\nsys\ntmp\nusr\nvar\n", ""},
		{[]string{"sh", "-c", "env | grep GREETING"}, 0, "GREETING=hello\n", ""},
		{[]string{"sh", "-c", "for i in 1 2 3; do sleep 1; echo $i; done; exit 3"}, 3, "1\n2\n3\n", ""},
		{[]string{"sh", "-c", "if"}, 2, "", "syntax error"},
		{[]string{"/bin/echo", "-n", "no newline"}, 0, "no newline", ""},
		{[]string{"/bin/false"}, 1, "", ""},
		{[]string{"id"}, 0, "uid=0(root) gid=0(root) groups=0(root)\n", ""},
		{[]string{"sh", "-c", "for i in $(seq 2 4); do echo $i; done"}, 0, "2\n3\n4\n", ""},
		{[]string{"sh", "-ec", "false; echo never"}, 1, "", ""},
		{[]string{"sh", "-c", "echo $1 $2", "name", "a", "b"}, 0, "a b\n", ""},
		{[]string{"sh", "-c", "printf '#!/bin/sh\\necho $1\\n' > /tmp/s.sh; sh /tmp/s.sh first second"}, 0, "first\n", ""},
		{[]string{"env", "A=1", "sh", "-c", "echo $A"}, 0, "1\n", ""},
		{[]string{"sh", "-c", "echo oops > /dev/stderr"}, 0, "", "oops\n"},
		{[]string{"sh", "-c", "[ -O /tmp ] && echo mine"}, 0, "mine\n", ""},
		{[]string{"sh", "-c", "mkdir /tmp/d; rm /tmp/d"}, 1, "", "rm: can't remove '/tmp/d': Is a directory\n"},
		{[]string{"sh", "-c", "cat <(echo hi)"}, 2, "", "process substitution is not simulated"},
		{[]string{"pg_isready"}, 0, "", ""}, // not simulated: under exec, it succeeds
	} {
		code, stdout, stderr := run(t, fsys, true, tc.argv...)
		if code != tc.code || stdout != tc.stdout || !strings.Contains(stderr, tc.stderr) || (tc.stderr == "" && stderr != "") {
			t.Errorf("%q: status %d, stdout %q, stderr %q; want %d, %q, %q", tc.argv, code, stdout, stderr, tc.code, tc.stdout, tc.stderr)
		}
	}
	if b, err := os.ReadFile(filepath.Join(fsys.mounts[1].HostPath, "out")); fsys.mounts[1].ContainerPath != "/data" || string(b) != "saved\n" {
		t.Errorf("the emptyDir's file on the host: %q, %v", b, err)
	}
}

// TestServer checks that a command the simulation does not know runs, as a
// container's process, until it is stopped.
func TestServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := Run(ctx, Process{Argv: []string{"sh", "-c", "echo starting; nginx -g 'daemon off;'"}, FS: NewFS(nil, false),
		Sleep: func(context.Context, time.Duration) error { return nil }})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("nginx returned %v, want it to run until stopped", err)
	}
}

// TestInteractive feeds a shell its statements on stdin, as kubectl exec
// -i does.
func TestInteractive(t *testing.T) {
	var out bytes.Buffer
	code, err := Run(context.Background(), Process{Argv: []string{"sh"}, Env: []string{"A=1"}, FS: NewFS(nil, false),
		Stdin: strings.NewReader("echo $A\nexit 4\necho never\n"), Stdout: &out})
	if err != nil || code != 4 || out.String() != "1\n" {
		t.Fatalf("status %d, %v, output %q", code, err, out.String())
	}
}

// TestReadOnlyRoot checks a read-only root file system
// (readOnlyRootFilesystem): only the mounts take writes.
func TestReadOnlyRoot(t *testing.T) {
	dir := t.TempDir()
	fsys := NewFS([]Mount{{ContainerPath: "/data", HostPath: dir}}, true)
	if code, _, stderr := run(t, fsys, false, "/bin/sh", "-c", "echo x > /file"); code != 1 || stderr != "/bin/sh: can't create /file: Read-only file system\n" {
		t.Errorf("a write to the root: status %d, stderr %q", code, stderr)
	}
	if code, stdout, _ := run(t, fsys, false, "sh", "-c", "echo x > /data/file && cat /data/file"); code != 0 || stdout != "x\n" {
		t.Errorf("a write to a volume: status %d, stdout %q", code, stdout)
	}
}

// TestNothingOnTheHost checks that the interpreter's own files (it opens
// <TMPDIR>/sh-interp-* on the host for its pipes) are out of a script's
// reach.
func TestNothingOnTheHost(t *testing.T) {
	name := "sh-interp-podtrace-test"
	for _, tmp := range []string{os.TempDir(), "/tmp"} {
		fsys := NewFS(nil, false)
		if code, _, stderr := run(t, fsys, false, "sh", "-c", "echo x > "+tmp+"/"+name+"; cat "+tmp+"/"+name); code != 0 || stderr != "" {
			t.Errorf("status %d, %q", code, stderr)
		}
		if _, err := os.Stat(filepath.Join(tmp, name)); err == nil {
			os.Remove(filepath.Join(tmp, name))
			t.Errorf("a script wrote %s on the host", filepath.Join(tmp, name))
		}
	}
}
