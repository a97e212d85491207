package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/podtrace/podtrace/source/stream"
	"github.com/spf13/cobra"
)

// newServeCmd runs the engine without the UI until interrupted.
func newServeCmd() *cobra.Command {
	var cf clusterFlags
	c := &cobra.Command{
		Use:   "serve [flags]",
		Short: "Run the embedded cluster without the UI until interrupted",
		Long: `Run the embedded cluster without the UI until interrupted, and print the
export KUBECONFIG=... line that points kubectl at it.`,
		Example: `  podtrace serve --data-dir /tmp/pt --nodes 5`,
		Args:    noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if ran, err := cf.enterPodNetwork(); ran {
				return err
			}
			e, cleanup, err := cf.start(c.Context())
			if err != nil {
				return err
			}
			defer cleanup()
			stopExport, err := stream.Export(e.Hub)
			if err != nil {
				return err
			}
			defer stopExport()
			fmt.Printf("podtrace: API server at %s\nexport KUBECONFIG=%s\n", e.API.URL, e.Kubeconfig)
			<-c.Context().Done()
			return nil
		},
	}
	cf.register(c.Flags(), 3)
	return c
}

// newKubeconfigCmd prints the kubeconfig path of a data dir.
func newKubeconfigCmd() *cobra.Command {
	var dir string
	c := &cobra.Command{
		Use:     "kubeconfig --data-dir DIR",
		Short:   "Print the kubeconfig path of a cluster kept in a data dir",
		Example: `  export KUBECONFIG=$(podtrace kubeconfig --data-dir /tmp/pt)`,
		Args:    noArgs,
		RunE: func(*cobra.Command, []string) error {
			if dir == "" {
				return fmt.Errorf("kubeconfig needs --data-dir (the cluster started with --data-dir DIR)")
			}
			path := filepath.Join(dir, "kubeconfig")
			if _, err := os.Stat(path); err != nil {
				return fmt.Errorf("no kubeconfig in %s: start podtrace with --data-dir %s first", dir, dir)
			}
			fmt.Println(path)
			return nil
		},
	}
	c.Flags().StringVar(&dir, "data-dir", "", "the data `DIR` a podtrace cluster keeps its state in")
	return c
}

func readAll(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	return data, nil
}
