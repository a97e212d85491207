package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/podtrace/podtrace/version"
)

// newVersionCmd prints podtrace's version and the Kubernetes release it pins.
func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print podtrace's version and the Kubernetes release it reproduces",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(c.OutOrStdout(), "podtrace %s\nkubernetes %s\n", podtraceVersion(), version.Kubernetes)
			return err
		},
	}
}

// podtraceVersion is version.Podtrace as -ldflags set it, else the module
// version `go install ...@vX` recorded, else "dev".
func podtraceVersion() string {
	if version.Podtrace != "dev" {
		return version.Podtrace
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return version.Podtrace
}
