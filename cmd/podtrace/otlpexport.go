package main

import (
	"fmt"
	"io"

	"github.com/podtrace/podtrace/engine/attach/spans"
)

// defaultOTLPAddr is the OTLP/gRPC port, for --print-tracing-config
// without --otlp-listen.
const defaultOTLPAddr = "127.0.0.1:4317"

// printTracingConfig writes what an operator sets on a 1.36 cluster so
// that its components send their spans to addr (attach --otlp-listen's).
func printTracingConfig(w io.Writer, addr string) error {
	if addr == "" {
		addr = defaultOTLPAddr
		fmt.Fprintf(w, "# %s: replace it with an address of podtrace's host that the nodes reach,\n# and run podtrace attach --otlp-listen there.\n", addr)
	}
	cfg, err := spans.OperatorConfig(addr)
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, cfg)
	return err
}
