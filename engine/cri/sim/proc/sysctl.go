package proc

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"time"

	"mvdan.cc/sh/v3/interp"
)

// ProcSys is where a container sees its kernel parameters (sysctls).
const ProcSys = "/proc/sys"

// sysctlDefaults are the namespaced sysctls a container has its own copy
// of (its pod's IPC and network namespaces'), as a new namespace on a
// Linux 6.x node shows them, with containerd 2's settings for a pod's
// network namespace (unprivileged ports and ICMP on). The kubelet's safe
// sysctls (pkg/kubelet/sysctl's safe list) are all here.
var sysctlDefaults = map[string]string{
	"kernel.shm_rmid_forced":              "0",
	"kernel.shmmax":                       "18446744073692774399",
	"kernel.shmall":                       "18446744073692774399",
	"kernel.shmmni":                       "4096",
	"kernel.msgmax":                       "8192",
	"kernel.msgmnb":                       "16384",
	"kernel.msgmni":                       "32000",
	"kernel.sem":                          "32000 1024000000 500 32000",
	"net.core.somaxconn":                  "4096",
	"net.ipv4.ip_forward":                 "0",
	"net.ipv4.ip_local_port_range":        "32768 60999",
	"net.ipv4.ip_local_reserved_ports":    "",
	"net.ipv4.ip_unprivileged_port_start": "0",
	"net.ipv4.ping_group_range":           "0 2147483647",
	"net.ipv4.tcp_syncookies":             "1",
	"net.ipv4.tcp_keepalive_time":         "7200",
	"net.ipv4.tcp_keepalive_intvl":        "75",
	"net.ipv4.tcp_keepalive_probes":       "9",
	"net.ipv4.tcp_fin_timeout":            "60",
	"net.ipv4.tcp_rmem":                   "4096 131072 6291456",
	"net.ipv4.tcp_wmem":                   "4096 16384 4194304",
}

// WithSysctls gives f its /proc/sys files: the namespaced sysctls'
// defaults with the pod's sysctls over them (CRI's
// LinuxPodSandboxConfig.Sysctls, which the kubelet gives with dots, and
// runc writes to /proc/sys with the dots as slashes). /proc/sys is
// read-only, as containerd mounts it, unless the container is
// privileged. It returns f.
func (f *FS) WithSysctls(sysctls map[string]string, privileged bool) *FS {
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	set := func(name, value string) {
		// The kernel shows a vector's values separated by tabs.
		v := strings.Join(strings.Fields(value), "\t") + "\n"
		f.files[path.Join(ProcSys, strings.ReplaceAll(name, ".", "/"))] = &memFile{data: []byte(v), modTime: now}
	}
	for name, v := range sysctlDefaults {
		set(name, v)
	}
	for name, v := range sysctls {
		set(name, v)
	}
	f.procSysReadOnly = !privileged
	return f
}

// readOnlyAt reports whether name lies in a read-only part of the
// in-memory layer: /proc/sys unless privileged, whatever the root's mode
// (/proc is a mount of its own, which readOnlyRootFilesystem leaves
// alone), and any other path when the root is read-only.
func (f *FS) readOnlyAt(name string) bool {
	if name == ProcSys || strings.HasPrefix(name, ProcSys+"/") {
		return f.procSysReadOnly
	}
	return f.readOnly
}

// sysctl flags, as busybox's sysctl reads them ("+neAapwq").
type sysctlFlags struct {
	noKeys, noKeyErrors, all, preload, write, quiet bool
}

// sysctl is busybox's sysctl: it reads (and, with -w or NAME=VALUE,
// writes) kernel parameters as /proc/sys's files, finds NAME's file as
// busybox does (the fewest dots made slashes), lists every parameter with
// -a or -A and sets a file's with -p (default /etc/sysctl.conf). It
// returns the exit status.
func (c *commands) sysctl(hc interp.HandlerContext, args []string) int {
	var fl sysctlFlags
	for len(args) > 0 && strings.HasPrefix(args[0], "-") && len(args[0]) > 1 {
		if args[0] == "--" {
			args = args[1:]
			break
		}
		for _, r := range args[0][1:] {
			switch r {
			case 'n':
				fl.noKeys = true
			case 'e':
				fl.noKeyErrors = true
			case 'A', 'a':
				fl.all = true
			case 'p':
				fl.preload = true
			case 'w':
				fl.write = true
			case 'q':
				fl.quiet = true
			default:
				fmt.Fprintf(hc.Stderr, "sysctl: invalid option -- '%c'\n", r)
				return 1
			}
		}
		args = args[1:]
	}
	s := sysctlRun{c: c, hc: hc, fl: fl}
	switch {
	case fl.preload:
		if len(args) == 0 {
			args = []string{"/etc/sysctl.conf"}
		}
		for _, file := range args {
			s.preload(file)
		}
		return 0 // busybox does not report a file's errors
	case fl.all:
		return s.recursive(ProcSys)
	}
	code := 0
	for _, a := range args {
		code |= s.recursive(c.sysctlPath(a))
	}
	return code
}

// sysctlRun is one sysctl command.
type sysctlRun struct {
	c  *commands
	hc interp.HandlerContext
	fl sysctlFlags
}

// sysctlPath is the /proc/sys file NAME[=VALUE] names: busybox's
// sysctl_dots_to_slashes makes the fewest dots slashes that name an
// existing file, from the end (net.ipv4.conf.eth0.100.mc_forwarding is
// net/ipv4/conf/eth0.100/mc_forwarding), keeping "=VALUE".
func (c *commands) sysctlPath(arg string) string {
	name, value, hasValue := strings.Cut(arg, "=")
	b := []byte(name + ".") // the trailing dot tries the whole name too
	lastGood := -1
again:
	for i := len(b) - 1; i > lastGood; i-- {
		if b[i] != '.' {
			continue
		}
		if _, err := c.p.FS.Stat(path.Join(ProcSys, string(b[:i]))); err == nil {
			b[i], lastGood = '/', i
			goto again
		}
	}
	p := path.Join(ProcSys, string(b[:len(b)-1]))
	if hasValue {
		p += "=" + value
	}
	return p
}

// recursive acts on a directory's every file when reading, else on the
// setting itself.
func (s sysctlRun) recursive(setting string) int {
	if info, err := s.c.p.FS.Stat(setting); err == nil && info.IsDir() && !s.fl.write {
		entries, err := s.c.p.FS.ReadDir(setting)
		if err != nil {
			return 1
		}
		code := 0
		for _, e := range entries {
			code |= s.recursive(path.Join(setting, e.Name()))
		}
		return code
	}
	return s.act(setting)
}

// act reads or writes one setting, printing it as busybox does; it
// returns the exit status.
func (s sysctlRun) act(setting string) int {
	out, errw := s.hc.Stdout, s.hc.Stderr
	file, value, writing := strings.Cut(setting, "=")
	outname := strings.ReplaceAll(strings.TrimPrefix(strings.TrimPrefix(file, ProcSys), "/"), "/", ".")
	if s.fl.write && !writing {
		fmt.Fprintf(errw, "sysctl: error: '%s' must be of the form name=value\n", outname)
		return 1
	}
	if writing && (value == "" || outname == "") {
		fmt.Fprintf(errw, "sysctl: error: malformed setting '%s=%s'\n", outname, value)
		return 1
	}
	flag := os.O_RDONLY
	if writing {
		flag = os.O_WRONLY | os.O_TRUNC
	}
	var r io.ReadWriteCloser
	var err error
	if writing && s.c.p.UID != 0 {
		// /proc/sys's files are root's: refused before anything changes.
		if _, err = s.c.p.FS.Stat(file); err == nil {
			err = fs.ErrPermission
		}
	} else {
		r, err = s.c.p.FS.Open(file, flag, 0o644)
	}
	if err != nil {
		verb := "read"
		if writing {
			verb = "sett"
		}
		switch {
		case errors.Is(err, fs.ErrPermission):
			// busybox says nothing: a write-only setting
		case errors.Is(err, fs.ErrNotExist):
			if !s.fl.noKeyErrors {
				fmt.Fprintf(errw, "sysctl: error: '%s' is an unknown key\n", outname)
			}
		default:
			fmt.Fprintf(errw, "sysctl: error %sing key '%s': %s\n", verb, outname, Reason(err))
		}
		return 1
	}
	defer r.Close()
	if writing {
		// The file then reads as the kernel shows the value.
		_, _ = io.WriteString(r, strings.Join(strings.Fields(value), "\t")+"\n")
		if !s.fl.quiet {
			s.line(out, outname, value+"\n")
		}
		return 0
	}
	b, err := io.ReadAll(r)
	if err != nil {
		fmt.Fprintf(errw, "sysctl: error reading key '%s': %s\n", outname, Reason(err))
		return 1
	}
	for _, l := range strings.SplitAfter(string(b), "\n") {
		if l != "" {
			s.line(out, outname, l)
		}
	}
	return 0
}

// line prints one line of a setting's value, after its name unless -n.
func (s sysctlRun) line(w io.Writer, name, l string) {
	if !s.fl.noKeys {
		fmt.Fprintf(w, "%s = ", name)
	}
	fmt.Fprint(w, l)
}

// preload sets the NAME = VALUE lines of file (# and ; start comments).
func (s sysctlRun) preload(file string) {
	r, err := s.c.p.FS.Open(abs(s.hc.Dir, file), os.O_RDONLY, 0)
	if err != nil {
		fmt.Fprintf(s.hc.Stderr, "sysctl: can't open '%s': %s\n", file, Reason(err))
		return
	}
	defer r.Close()
	sc := bufio.NewScanner(r)
	var lines []string
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, ";") {
			continue
		}
		name, value, ok := strings.Cut(l, "=")
		if !ok {
			continue
		}
		lines = append(lines, s.c.sysctlPath(strings.TrimSpace(name))+"="+strings.TrimSpace(value))
	}
	for _, l := range lines {
		s.act(l)
	}
}
