package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/podtrace/podtrace/version"
)

// versionText is what `podtrace version` and `podtrace --version` print:
// podtrace's version and the Kubernetes release it pins.
func versionText() string {
	return fmt.Sprintf("podtrace %s\nkubernetes %s\n", version.Podtrace, version.Kubernetes)
}

// newVersionCmd prints podtrace's version and the Kubernetes release it pins.
func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print podtrace's version and the Kubernetes release it reproduces",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			_, err := fmt.Fprint(c.OutOrStdout(), versionText())
			return err
		},
	}
}

// setVersion gives root a --version flag that prints what `podtrace
// version` prints. The flag is declared here, without cobra's -v shorthand,
// which kubectl users read as log verbosity.
func setVersion(root *cobra.Command) {
	root.Version = version.Podtrace
	// A template with no actions prints itself; keep it so even if a version
	// string ever held "{{".
	root.SetVersionTemplate(strings.NewReplacer("{{", `{{"{{"}}`).Replace(versionText()))
	root.Flags().Bool("version", false, "print podtrace's version and the Kubernetes release it reproduces")
}
