package podnet

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Reexec runs the current program again, with the same arguments, in a
// new user and network namespace, and returns its exit code once it ends;
// hostAddr ("127.0.0.1:0"), unless empty, is bound here first and handed
// over (see HostListener). Signals podtrace stops on are passed to the child.
// ErrUnsupported, or the error that kept the namespace from being made,
// means nothing ran: go on in the host's namespace.
func Reexec(hostAddr string) (int, error) {
	if Inside() {
		return 0, errors.New("podnet: already inside a pod network namespace")
	}
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	var listener *os.File
	addr := noListener
	if hostAddr != "" {
		ln, err := net.Listen("tcp", hostAddr)
		if err != nil {
			return 0, err
		}
		listener, err = ln.(*net.TCPListener).File()
		ln.Close()
		if err != nil {
			return 0, err
		}
		defer listener.Close()
		addr = ln.Addr().String()
	}
	command := func() *exec.Cmd {
		cmd := exec.Command(self, os.Args[1:]...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		cmd.Env = append(os.Environ(), envChild+"="+addr)
		if listener != nil {
			cmd.ExtraFiles = []*os.File{listener}
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET,
			Pdeathsig:  syscall.SIGKILL,
		}
		return cmd
	}
	// The child shares the terminal and its process group, so a Ctrl-C
	// there reaches it directly; signals sent to this process alone are
	// passed on.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	cmd, err := start(command)
	if err != nil {
		return 0, fmt.Errorf("podnet: %w", err)
	}
	go func() {
		for s := range sigs {
			cmd.Process.Signal(s) //nolint:errcheck // it may have exited
		}
	}()
	err = cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if st, ok := ee.Sys().(syscall.WaitStatus); ok && st.Signaled() {
			return 128 + int(st.Signal()), nil
		}
		return ee.ExitCode(), nil
	}
	if err != nil {
		return 0, err
	}
	return 0, nil
}

// idMaps maps the namespace's user and group IDs. Run by root, it maps
// IDs 0-65535 to themselves, as a container runtime sizes a user
// namespace: the kubelet gives a pod's files to its runAsUser and fsGroup
// (the projected service account token, for one), and a chown to an
// unmapped ID fails ("invalid argument"), which keeps such a pod from
// starting. (Not every ID: with the host's own full map, the kubelet would
// take itself for outside a user namespace and fail to open /dev/kmsg.)
// Anyone else maps their own IDs to root there, and, through newuidmap and
// newgidmap, IDs 1-65535 to their subordinate IDs (subordinateMaps);
// without those, pods with a runAsUser or fsGroup fail to start.
func idMaps(attr *syscall.SysProcAttr, uid, gid int) {
	if uid == 0 {
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: mappedIDs}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: mappedIDs}}
		attr.GidMappingsEnableSetgroups = true
		return
	}
	attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: uid, Size: 1}}
	attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: gid, Size: 1}}
}

// mappedIDs is how many user and group IDs the namespace maps when it can
// map more than root's.
const mappedIDs = 1 << 16

// Setup brings the namespace's loopback interface up; call it once,
// early, in the child.
func Setup() error {
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("podnet: %w", err)
	}
	if err := netlink.LinkSetUp(lo); err != nil {
		return fmt.Errorf("podnet: loopback up: %w", err)
	}
	return nil
}

// AddRange makes every address of cidr ("10.244.1.0/24") local inside
// the namespace: pods bind their own IPs there and the kubelet's probes
// reach them. A single address ("172.18.0.2/32", a node's) goes on the
// loopback interface, where the kubelet looks for its node IP. A range
// becomes a local route to the loopback instead (`ip route add local
// 10.244.1.0/24 dev lo table local`), the very route the kernel adds for
// an address of that prefix, without the address: every kubelet lists
// the interfaces' addresses each time it updates its node's status (every
// 2 s), so one address per pod range made that O(nodes²) work.
func AddRange(cidr string) error {
	if !Inside() {
		return errors.New("podnet: not inside a pod network namespace")
	}
	ip, ipnet, err := net.ParseCIDR(cidr)
	if err != nil {
		return err
	}
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("podnet: %w", err)
	}
	ipnet.IP = ip.Mask(ipnet.Mask)
	if ones, bits := ipnet.Mask.Size(); ones == bits {
		if err := netlink.AddrReplace(lo, &netlink.Addr{IPNet: ipnet}); err != nil {
			return fmt.Errorf("podnet: add %s to lo: %w", cidr, err)
		}
		return nil
	}
	route := &netlink.Route{LinkIndex: lo.Attrs().Index, Dst: ipnet, Src: ipnet.IP,
		Type: unix.RTN_LOCAL, Table: unix.RT_TABLE_LOCAL, Scope: netlink.SCOPE_HOST}
	if err := netlink.RouteReplace(route); err != nil {
		return fmt.Errorf("podnet: local route %s via lo: %w", cidr, err)
	}
	return nil
}
