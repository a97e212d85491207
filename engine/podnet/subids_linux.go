package podnet

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"

	"github.com/moby/sys/user"
)

// envMapped, in the child, names the file descriptor on which it waits for
// newuidmap and newgidmap to map its IDs (see start).
const envMapped = "PODTRACE_PODNET_MAPPED"

// start starts the child command makes. Run by a user with subordinate
// IDs (/etc/subuid and /etc/subgid, as rootless Podman and Docker use
// them), it maps their IDs through the setuid helpers newuidmap and
// newgidmap, so that pods may run as other users; if that fails, or
// without them, it starts the child again with the IDs the process may
// map itself (idMaps).
func start(command func() *exec.Cmd) (*exec.Cmd, error) {
	uid, gid := os.Getuid(), os.Getgid()
	if uidArgs, gidArgs, ok := subordinateMaps(uid, gid); ok {
		cmd, err := startMapped(command(), uidArgs, gidArgs)
		if err == nil {
			return cmd, nil
		}
		fmt.Fprintf(os.Stderr, "podtrace: %v; pods that run as another user will not start\n", err)
	}
	cmd := command()
	idMaps(cmd.SysProcAttr, uid, gid)
	return cmd, cmd.Start()
}

// startMapped starts cmd unmapped, waiting on a pipe; maps its IDs with
// newuidmap and newgidmap; then lets it go on (see waitMapped), or kills
// it if the mapping failed.
func startMapped(cmd *exec.Cmd, uidArgs, gidArgs []string) (*exec.Cmd, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer w.Close()
	cmd.ExtraFiles = append(cmd.ExtraFiles, r)
	cmd.Env = append(cmd.Env, envMapped+"="+strconv.Itoa(2+len(cmd.ExtraFiles)))
	err = cmd.Start()
	r.Close()
	if err != nil {
		return nil, err
	}
	pid := strconv.Itoa(cmd.Process.Pid)
	for _, m := range [][]string{append([]string{"newuidmap", pid}, uidArgs...), append([]string{"newgidmap", pid}, gidArgs...)} {
		if out, err := exec.Command(m[0], m[1:]...).CombinedOutput(); err != nil {
			cmd.Process.Kill() //nolint:errcheck // it waits for the pipe
			cmd.Wait()         //nolint:errcheck
			return nil, fmt.Errorf("%s: %v: %s", m[0], err, strings.TrimSpace(string(out)))
		}
	}
	if _, err := w.Write([]byte{1}); err != nil {
		return nil, err
	}
	return cmd, nil
}

// subordinateMaps returns newuidmap's and newgidmap's mappings for a user
// who is not root: root in the namespace is the user, and IDs 1-65535 are
// the first of the user's subordinate IDs. ok is false when the helpers
// are not installed or either range is missing or too small.
func subordinateMaps(uid, gid int) (uidArgs, gidArgs []string, ok bool) {
	if uid == 0 {
		return nil, nil, false
	}
	for _, helper := range []string{"newuidmap", "newgidmap"} {
		if _, err := exec.LookPath(helper); err != nil {
			return nil, nil, false
		}
	}
	subUID, err1 := user.CurrentUserSubUIDs()
	subGID, err2 := user.CurrentUserSubGIDs()
	if err1 != nil || err2 != nil || len(subUID) == 0 || len(subGID) == 0 ||
		subUID[0].Count < mappedIDs-1 || subGID[0].Count < mappedIDs-1 {
		return nil, nil, false
	}
	args := func(own int, sub user.SubID) []string {
		return []string{"0", strconv.Itoa(own), "1", "1", strconv.FormatInt(sub.SubID, 10), strconv.Itoa(mappedIDs - 1)}
	}
	return args(uid, subUID[0]), args(gid, subGID[0]), true
}

// waitMapped runs in the child that startMapped started: it waits until
// its IDs are mapped, then runs the program again, which gives it root's
// capabilities in its namespace (a process gets them when it starts as
// root there, and this one started unmapped). If the mapping failed it
// exits, and the parent starts another child.
func waitMapped() {
	fd, err := strconv.Atoi(os.Getenv(envMapped))
	if err != nil {
		return
	}
	os.Unsetenv(envMapped)
	ready := os.NewFile(uintptr(fd), "podnet-mapped")
	b := make([]byte, 1)
	n, _ := ready.Read(b)
	ready.Close()
	if n != 1 {
		os.Exit(1)
	}
	self, err := os.Executable()
	if err == nil {
		err = syscall.Exec(self, os.Args, append(os.Environ(), envChild+"="+child))
	}
	fmt.Fprintf(os.Stderr, "podtrace: podnet: %v\n", err)
	os.Exit(1)
}

func init() {
	if child != "" {
		waitMapped()
	}
}
