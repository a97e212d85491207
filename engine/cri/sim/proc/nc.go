package proc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"time"

	"mvdan.cc/sh/v3/interp"
)

// ncOptions are the options of busybox's nc (1.36, nc 1.10 compatible)
// that the simulation reads. -t (TCP, the default, as other nc's take it),
// -n, -b, -p, -s, -i and -o are taken and ignored, and so is -e's program.
type ncOptions struct {
	udp, zero, verbose, listen bool
	wait                       time.Duration // -w: for the connect, and for replies once stdin ended; 0 for none
	operands                   []string
}

const ncUsage = "Usage: nc [OPTIONS] HOST PORT  - connect\nnc [OPTIONS] -l -p PORT [HOST] [PORT]  - listen\n"

// parseNc reads nc's arguments, its options before, between or after the
// operands; it returns what to print and exit 1 with, if they are wrong.
func parseNc(args []string) (o ncOptions, fault string) {
args:
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			o.operands = append(o.operands, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			o.operands = append(o.operands, a)
			continue
		}
		for j := 1; j < len(a); j++ {
			switch letter := a[j]; letter {
			case 'u':
				o.udp = true
			case 'z':
				o.zero = true
			case 'v':
				o.verbose = true
			case 'l', 'k':
				o.listen = true
			case 't', 'n', 'b':
			case 'e': // -e PROG [ARGS]: the rest of the command
				break args
			case 'w', 'p', 's', 'i', 'o': // each takes a value: the rest of the word, or the next
				v := a[j+1:]
				if v == "" && i+1 < len(args) {
					i++
					v = args[i]
				}
				n, err := strconv.Atoi(v)
				switch {
				case v == "":
					return o, fmt.Sprintf("nc: option requires an argument -- '%c'\n%s", letter, ncUsage)
				case letter == 'w' && (err != nil || n < 0):
					return o, fmt.Sprintf("nc: invalid number '%s'\n", v)
				case letter == 'w':
					o.wait = time.Duration(n) * time.Second
				}
				j = len(a)
			default:
				return o, fmt.Sprintf("nc: invalid option -- '%c'\n%s", letter, ncUsage)
			}
		}
	}
	if len(o.operands) != 2 && !o.listen {
		return o, ncUsage
	}
	return o, ""
}

// nc is busybox's nc as a client: it connects to HOST PORT over TCP, or
// UDP with -u, from the pod network namespace, the host found as wget
// finds it; then it sends stdin and writes what comes back to stdout
// until both have ended, or stdin has and nothing came for -w seconds.
// -z only connects; -v says "HOST (IP:PORT) open". A failed connect ends
// it with status 1, in busybox's words.
func (c *commands) nc(ctx context.Context, hc interp.HandlerContext, args []string) error {
	o, fault := parseNc(args)
	if fault != "" {
		fmt.Fprint(hc.Stderr, fault)
		return interp.ExitStatus(1)
	}
	host, port := o.operands[0], o.operands[1]
	ip := c.resolve(ctx, host)
	if ip == nil {
		fmt.Fprintf(hc.Stderr, "nc: bad address '%s'\n", host)
		return interp.ExitStatus(1)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		port = "0" // busybox's port for a name it does not know
	}
	network := "tcp"
	if o.udp {
		network = "udp"
	}
	target := net.JoinHostPort(ip.String(), port)
	conn, err := c.p.Dial(ctx, network, target, o.wait)
	if err == nil && o.zero && o.udp {
		err = c.udpProbe(ctx, conn, o.wait)
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		fmt.Fprintf(hc.Stderr, "nc: can't connect to remote host (%s): %s\n", ip, connectError(err))
		return interp.ExitStatus(1)
	}
	defer conn.Close()
	if o.verbose {
		fmt.Fprintf(hc.Stderr, "%s (%s) open\n", host, target)
	}
	if o.zero {
		return nil
	}
	return relay(ctx, hc, conn, o.wait)
}

// udpProbe is how nc -z tells whether a UDP port is open: a byte sent,
// -w waited, another sent, which fails if the first was refused.
func (c *commands) udpProbe(ctx context.Context, conn net.Conn, wait time.Duration) error {
	_, _ = conn.Write([]byte{0})
	if err := c.p.Sleep(ctx, wait); err != nil {
		return err
	}
	_, err := conn.Write([]byte{0})
	return err
}

// relay copies stdin to conn (then closes conn's sending side, for TCP)
// and conn's replies to stdout, until conn has ended and stdin too, or
// stdin has ended and nothing came for wait (when not 0).
func relay(ctx context.Context, hc interp.HandlerContext, conn net.Conn, wait time.Duration) error {
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		if hc.Stdin != nil {
			if err := send(conn, hc.Stdin); err != nil {
				_, _ = io.Copy(io.Discard, hc.Stdin) // the connection is gone: read on to the end
			}
		}
		if tcp, ok := conn.(interface{ CloseWrite() error }); ok {
			_ = tcp.CloseWrite() // TCP: no more to send
		}
	}()
	stop := context.AfterFunc(ctx, func() { conn.Close() }) // a stopped process's connection ends
	defer stop()
	buf := make([]byte, 8192)
	for {
		if wait > 0 {
			_ = conn.SetReadDeadline(time.Now().Add(wait))
		}
		n, err := conn.Read(buf)
		_, _ = hc.Stdout.Write(buf[:n])
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, os.ErrDeadlineExceeded):
			select {
			case <-sent:
				return nil // idle with nothing more to send
			default:
			}
		case err != nil: // the connection ended (EOF, or a refused UDP port)
			select {
			case <-sent:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
}

// send copies in to conn: over UDP a line to a datagram, as a shell's
// echo writes a line at once (the simulated shell's echo writes its
// words and its newline apart, which a pipe may deliver as two reads,
// and UDP would send as two datagrams).
func send(conn net.Conn, in io.Reader) error {
	if _, ok := conn.(*net.UDPConn); !ok {
		_, err := io.Copy(conn, in)
		return err
	}
	br := bufio.NewReader(in)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			if _, werr := conn.Write(line); werr != nil {
				return werr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// connectError is a failed connect's reason in busybox's words.
func connectError(err error) string {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "Connection timed out"
	}
	return errnoText(err)
}
