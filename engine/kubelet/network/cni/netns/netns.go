//go:build linux

// Package netns creates, enters and removes named Linux network namespaces
// pinned by a bind mount, as `ip netns add` does, but under a directory of
// podtrace's own instead of /run/netns.
package netns

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"
)

// Create makes a new network namespace and pins it at path (a file created
// for the bind mount); it returns path. The calling goroutine's namespace
// is not changed.
func Create(path string) (string, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("create netns %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return "", fmt.Errorf("create netns %s: %w", path, err)
	}
	f.Close()
	errc := make(chan error, 1)
	// A fresh thread unshares; it is dropped afterwards (never unlocked)
	// when it cannot be returned to the original namespace.
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
		if err != nil {
			errc <- err
			runtime.UnlockOSThread()
			return
		}
		defer orig.Close()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("unshare: %w", err)
			runtime.UnlockOSThread()
			return
		}
		src := fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid())
		merr := unix.Mount(src, path, "none", unix.MS_BIND, "")
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- errors.Join(merr, fmt.Errorf("setns back: %w", err))
			return // leave the thread locked: the runtime discards it
		}
		runtime.UnlockOSThread()
		if merr != nil {
			merr = fmt.Errorf("bind mount: %w", merr)
		}
		errc <- merr
	}()
	if err := <-errc; err != nil {
		_ = os.Remove(path)
		return "", fmt.Errorf("create netns %s: %w", path, err)
	}
	if err := setLoopbackUp(path); err != nil {
		_ = Remove(path)
		return "", err
	}
	return path, nil
}

// Remove unmounts and deletes a namespace pinned by Create; a missing path
// is not an error.
func Remove(path string) error {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("remove netns %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove netns %s: %w", path, err)
	}
	return nil
}

// Do runs fn on an OS thread that has entered the namespace pinned at path.
// Sockets fn opens and processes it starts belong to that namespace.
func Do(path string, fn func() error) error {
	ns, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("enter netns: %w", err)
	}
	defer ns.Close()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("enter netns: %w", err)
			return
		}
		defer orig.Close()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("enter netns %s: %w", path, err)
			return
		}
		ferr := fn()
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- errors.Join(ferr, fmt.Errorf("leave netns: %w", err))
			return // the locked thread is discarded
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// setLoopbackUp brings lo up in the namespace, as the loopback CNI plugin
// would; the node namespace needs it for local traffic.
func setLoopbackUp(path string) error {
	return Do(path, func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("loopback up: %w", err)
		}
		defer unix.Close(fd)
		ifr, err := unix.NewIfreq("lo")
		if err != nil {
			return fmt.Errorf("loopback up: %w", err)
		}
		if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
			return fmt.Errorf("loopback up: %w", err)
		}
		ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
		if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
			return fmt.Errorf("loopback up: %w", err)
		}
		return nil
	})
}
