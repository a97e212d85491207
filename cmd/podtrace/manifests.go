package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/resource"

	"github.com/podtrace/podtrace/engine/apply"
)

// manifest is one file named by -f, read.
type manifest struct {
	name string // the path, or "-" for standard input
	data []byte
}

// filenameFlags registers kubectl's own -f/--filename (repeatable, or
// comma-separated) and -R/--recursive on fs.
func filenameFlags(fs *pflag.FlagSet) *genericclioptions.FileNameFlags {
	f := &genericclioptions.FileNameFlags{
		Usage:     "manifest file, directory of manifests (.yaml, .yml, .json) or - for standard input; repeatable",
		Filenames: &[]string{}, Recursive: new(bool),
	}
	f.AddFlags(fs)
	return f
}

// readManifests reads the files of opts as `kubectl apply -f` finds them:
// "-" is standard input; a path that does not exist is a glob pattern; a
// directory gives its .yaml, .yml and .json files in lexical order (those of
// its subdirectories too with -R); a file named explicitly is read whatever
// its extension.
func readManifests(opts resource.FilenameOptions, stdin io.Reader) ([]manifest, error) {
	var out []manifest
	for _, name := range opts.Filenames {
		if name == "-" {
			data, err := readAll(stdin)
			if err != nil {
				return nil, err
			}
			out = append(out, manifest{name: "-", data: data})
			continue
		}
		paths, err := expandPattern(name)
		if err != nil {
			return nil, err
		}
		for _, root := range paths {
			n := len(out)
			err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
				switch {
				case err != nil:
					return err
				case d.IsDir() && path != root && !opts.Recursive:
					return filepath.SkipDir
				case d.IsDir() || path != root && !slices.Contains(resource.FileExtensions, filepath.Ext(path)):
					return nil
				}
				data, err := os.ReadFile(path)
				out = append(out, manifest{name: path, data: data})
				return err
			})
			if err != nil {
				return nil, fmt.Errorf("read manifest: %w", err)
			}
			if len(out) == n {
				return nil, fmt.Errorf("no manifests in %s: want .yaml, .yml or .json files (-R for subdirectories)", root)
			}
		}
	}
	return out, nil
}

// expandPattern returns name if it exists, else the paths the glob
// pattern name matches, as kubectl does.
func expandPattern(name string) ([]string, error) {
	if _, err := os.Stat(name); !errors.Is(err, fs.ErrNotExist) {
		return []string{name}, nil
	}
	matches, err := filepath.Glob(name)
	if err != nil {
		return nil, fmt.Errorf("pattern %q is not valid: %w", name, err)
	}
	if len(matches) == 0 {
		return nil, fmt.Errorf("the path %q does not exist", name)
	}
	return matches, nil
}

// parseManifests decodes every manifest.
func parseManifests(ms []manifest) ([]apply.Object, error) {
	var objs []apply.Object
	for _, m := range ms {
		o, err := apply.Parse(m.data, m.name)
		if err != nil {
			return nil, err
		}
		objs = append(objs, o...)
	}
	return objs, nil
}

// applyManifests applies the manifests in order. Objects of kinds the
// server does not serve are left out with one line each on stderr, unless
// nothing else was applied: then that is the error.
func applyManifests(ctx context.Context, a *apply.Applier, ms []manifest) error {
	applied := 0
	var unserved []error
	for _, m := range ms {
		res, err := a.Apply(ctx, m.data, m.name)
		applied += len(res)
		var u *apply.UnservedError
		if errors.As(err, &u) {
			unserved = append(unserved, u.Errors...)
		} else if err != nil {
			return err
		}
	}
	if applied == 0 && len(unserved) > 0 {
		return unserved[0]
	}
	for _, err := range unserved {
		fmt.Fprintf(terminal, "podtrace: skipping %v\n", err)
	}
	return nil
}
