package main

import (
	"fmt"

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
			_, err := fmt.Fprintf(c.OutOrStdout(), "podtrace %s\nkubernetes %s\n", version.Podtrace, version.Kubernetes)
			return err
		},
	}
}
