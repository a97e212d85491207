package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/resource"

	"github.com/podtrace/podtrace/engine/apply"
)

// filenameFlags registers kubectl's own -f/--filename (repeatable, or
// comma-separated) and -R/--recursive on fs.
func filenameFlags(fs *pflag.FlagSet) *genericclioptions.FileNameFlags {
	f := &genericclioptions.FileNameFlags{
		Usage:     "manifest file, directory of manifests (.yaml, .yml, .json), URL, or - for standard input; repeatable",
		Filenames: &[]string{}, Recursive: new(bool),
	}
	f.AddFlags(fs)
	return f
}

// readManifests reads and decodes the manifests of opts as `kubectl apply
// -f` does (see apply.Read); none when opts names none.
func readManifests(opts resource.FilenameOptions) ([]apply.Object, error) {
	if len(opts.Filenames) == 0 {
		return nil, nil
	}
	return apply.Read(opts)
}

// applyManifests applies the manifests' objects in order. Objects of kinds
// the server does not serve are left out with one line each on stderr,
// unless nothing else was applied: then that is the error.
func applyManifests(ctx context.Context, a *apply.Applier, objs []apply.Object) error {
	res, err := a.ApplyObjects(ctx, objs)
	var u *apply.UnservedError
	if !errors.As(err, &u) {
		return err
	}
	if len(res) == 0 {
		return u.Errors[0]
	}
	for _, err := range u.Errors {
		fmt.Fprintf(terminal, "podtrace: skipping %v\n", err)
	}
	return nil
}
