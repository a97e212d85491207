package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// serveCmd runs the engine without the UI until interrupted.
func serveCmd(ctx context.Context, args []string) error {
	fs := newFlagSet("serve")
	var cf clusterFlags
	cf.register(fs, 3)
	if err := parse(fs, args); err != nil {
		return err
	}
	e, cleanup, err := cf.start(ctx)
	if err != nil {
		return err
	}
	defer cleanup()
	fmt.Printf("podtrace: API server at %s\nexport KUBECONFIG=%s\n", e.API.URL, e.Kubeconfig)
	<-ctx.Done()
	return nil
}

// kubeconfigCmd prints the kubeconfig path of a data dir.
func kubeconfigCmd(args []string) error {
	fs := newFlagSet("kubeconfig")
	dir := fs.String("data-dir", "", "the data `DIR` a podtrace cluster keeps its state in")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *dir == "" {
		return fmt.Errorf("kubeconfig needs --data-dir (the cluster started with --data-dir DIR)")
	}
	path := filepath.Join(*dir, "kubeconfig")
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("no kubeconfig in %s: start podtrace with --data-dir %s first", *dir, *dir)
	}
	fmt.Println(path)
	return nil
}

func readAll(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	return data, nil
}
