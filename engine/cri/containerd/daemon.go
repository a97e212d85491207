// Package containerd runs containerd for podtrace's real-container nodes:
// one daemon per node with containerd's own CRI plugin, which the node's
// real kubelet drives through podtrace's CRI interposer.
package containerd

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/containerd/containerd/v2/client"
)

// Daemon is a containerd process podtrace started, with its root, state,
// socket and log file under one directory.
type Daemon struct {
	// Address is the gRPC socket.
	Address string
	// Dir holds root/, state/ and containerd.log.
	Dir  string
	cmd  *exec.Cmd
	done chan error
}

// StartDaemon runs the containerd binary (from PATH when bin is empty) with
// its directories under dir and waits until it answers on its socket. cri
// is the CRI plugin's configuration (TOML under its table, see criTOML);
// empty disables the plugin.
func StartDaemon(ctx context.Context, bin, dir, cri string) (*Daemon, error) {
	if bin == "" {
		p, err := exec.LookPath("containerd")
		if err != nil {
			return nil, fmt.Errorf("start containerd: %w (install the containerd package)", err)
		}
		bin = p
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("start containerd: %w", err)
	}
	for _, d := range []string{"root", "state"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o711); err != nil {
			return nil, fmt.Errorf("start containerd: %w", err)
		}
	}
	d := &Daemon{Dir: dir, Address: socketPath(filepath.Join(dir, "containerd.sock")), done: make(chan error, 1)}
	if err := os.MkdirAll(filepath.Dir(d.Address), 0o711); err != nil {
		return nil, fmt.Errorf("start containerd: %w", err)
	}
	cfg := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfg, []byte(configTOML(dir, d.Address, cri)), 0o644); err != nil {
		return nil, fmt.Errorf("start containerd: %w", err)
	}
	logf, err := os.OpenFile(filepath.Join(dir, "containerd.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("start containerd: %w", err)
	}
	d.cmd = exec.Command(bin, "--config", cfg)
	d.cmd.Stdout, d.cmd.Stderr = logf, logf
	// Its own process group: a Ctrl-C meant for the UI does not reach it.
	d.cmd.SysProcAttr = daemonProcAttr()
	if err := d.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start containerd: %w", err)
	}
	go func() { d.done <- d.cmd.Wait(); logf.Close() }()
	if err := d.waitReady(ctx, 30*time.Second); err != nil {
		_ = d.Close()
		return nil, fmt.Errorf("start containerd: %w (see %s)", err, logf.Name())
	}
	return d, nil
}

func (d *Daemon) waitReady(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		select {
		case err := <-d.done:
			d.done <- err
			return fmt.Errorf("containerd exited: %v", err)
		default:
		}
		if _, err := os.Stat(d.Address); err == nil {
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			c, err := client.New(d.Address, client.WithTimeout(2*time.Second))
			if err == nil {
				_, err = c.Version(cctx)
				c.Close()
			}
			cancel()
			if err == nil {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return errors.New("containerd did not answer within " + limit.String())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Close stops containerd (SIGTERM, then SIGKILL after 10 s). Running
// shims keep their containers; the runtime removes those first.
func (d *Daemon) Close() error {
	if d.cmd == nil || d.cmd.Process == nil {
		return nil
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(10 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.done
	}
	d.cmd = nil
	return nil
}

// socketPath keeps a socket's path p under the 108-byte limit of unix
// sockets: p when short enough, else the same name under /run.
func socketPath(p string) string {
	if len(p) < 100 {
		return p
	}
	return filepath.Join("/run", fmt.Sprintf("podtrace-%x", sha256.Sum256([]byte(p)))[:20], filepath.Base(p))
}

// configTOML is a version 2 configuration (containerd 1.6 and 1.7; 2.x
// migrates it): overlayfs, runc v2 shim, and the CRI plugin configured by
// cri or disabled.
func configTOML(dir, sock, cri string) string {
	disabled := `"io.containerd.grpc.v1.cri", `
	if cri != "" {
		disabled = ""
	}
	return fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = [%s"io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = %q

[ttrpc]
  address = %q

[debug]
  level = "info"

[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = %q
%s`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), disabled, sock, sock+".ttrpc", filepath.Join(dir, "opt"), cri)
}
