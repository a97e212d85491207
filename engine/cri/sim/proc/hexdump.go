package proc

import (
	"encoding/hex"
	"fmt"
	"io"

	"mvdan.cc/sh/v3/interp"
)

// hexdump is busybox's hexdump -C (the canonical hex and ASCII display,
// which encoding/hex's Dumper writes), then the length, for each file or
// stdin. Unlike hexdump it shows repeated lines rather than a "*". Other
// formats are refused.
func (c *commands) hexdump(hc interp.HandlerContext, args []string) error {
	if len(flags(args)) != 1 || flags(args)[0] != "C" {
		fmt.Fprintln(hc.Stderr, "hexdump: only -C is simulated")
		return interp.ExitStatus(1)
	}
	var n int64
	d := hex.Dumper(hc.Stdout)
	err := c.each(hc, "hexdump", operands(args), func(r io.Reader) error {
		m, err := io.Copy(d, r)
		n += m
		return err
	})
	d.Close()
	if n > 0 {
		fmt.Fprintf(hc.Stdout, "%08x\n", n)
	}
	return err
}
