package tmuxtest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
)

// control is one tmux control-mode client (tmux -C) attached to a session,
// through which the screen is read: a poll then costs a line written to
// the server, not a tmux process of its own (about 13 ms of CPU each).
// The client does not size the window (ignore-size), sends nothing to the
// pane (read-only) and is sent none of its output (no-output).
type control struct {
	mu  sync.Mutex
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
	err error // why the client is gone, once it is
}

// startControl attaches a control-mode client to session on socket.
func startControl(socket, session string) *control {
	c := &control{cmd: exec.Command("tmux", "-L", socket, "-C", "attach-session", "-t", session,
		"-f", "ignore-size,read-only,no-output")}
	var err error
	if c.in, err = c.cmd.StdinPipe(); err == nil {
		var out io.ReadCloser
		if out, err = c.cmd.StdoutPipe(); err == nil {
			c.out = bufio.NewReader(out)
			err = c.cmd.Start()
		}
	}
	c.err = err
	return c
}

// run runs one tmux command and returns its output, or why it failed.
func (c *control) run(command string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return "", c.err
	}
	if _, err := io.WriteString(c.in, command+"\n"); err != nil {
		c.err = err
		return "", err
	}
	// Every command's output comes between "%begin TIME NUMBER FLAGS" and
	// "%end" (or "%error") with the same TIME and NUMBER; FLAGS 1 marks a
	// command this client sent (the attach itself has its own block).
	// Notifications come between blocks.
	for {
		line, err := c.out.ReadString('\n')
		if err != nil {
			c.err = fmt.Errorf("tmux control client: %w", err)
			return "", c.err
		}
		fields := strings.Fields(line)
		if len(fields) != 4 || fields[0] != "%begin" {
			continue
		}
		var body strings.Builder
		for {
			l, err := c.out.ReadString('\n')
			if err != nil {
				c.err = fmt.Errorf("tmux control client: %w", err)
				return "", c.err
			}
			if f := strings.Fields(l); len(f) == 4 && (f[0] == "%end" || f[0] == "%error") && f[1] == fields[1] && f[2] == fields[2] {
				if fields[3] != "1" {
					break // not this client's command
				}
				if f[0] == "%error" {
					return "", errors.New(strings.TrimSpace(body.String()))
				}
				return body.String(), nil
			}
			body.WriteString(l)
		}
	}
}

// close detaches the client.
func (c *control) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.in != nil {
		c.in.Close()
	}
	if c.cmd.Process != nil {
		c.cmd.Process.Kill()
		c.cmd.Wait()
	}
	c.err = errors.New("tmux control client closed")
}
