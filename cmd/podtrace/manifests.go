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

// parseManifests decodes every manifest. Objects of kinds podtrace does not
// serve are left out with one line each on stderr, unless nothing else is
// left: then that is the error.
func parseManifests(ms []manifest) ([]apply.Object, error) {
	var objs []apply.Object
	var unserved []error
	for _, m := range ms {
		o, err := apply.Parse(m.data, m.name)
		var u *apply.UnservedError
		if err != nil && !errors.As(err, &u) {
			return nil, err
		}
		if err != nil {
			unserved = append(unserved, err)
		}
		objs = append(objs, o...)
	}
	if len(objs) == 0 && len(unserved) > 0 {
		return nil, unserved[0]
	}
	for _, err := range unserved {
		warnUnserved(err)
	}
	return objs, nil
}

// warnUnserved tells, one line each, which objects of a manifest podtrace
// leaves out because it does not serve their kinds.
func warnUnserved(err error) {
	var unserved *apply.UnservedError
	if errors.As(err, &unserved) {
		for _, e := range unserved.Errors {
			fmt.Fprintf(os.Stderr, "podtrace: skipping %v\n", e)
		}
	}
}

// applyManifests applies the manifests in order; objects of kinds podtrace
// does not serve were reported by parseManifests and are skipped.
func applyManifests(ctx context.Context, a *apply.Applier, ms []manifest) error {
	for _, m := range ms {
		var unserved *apply.UnservedError
		if _, err := a.Apply(ctx, m.data, m.name); err != nil && !errors.As(err, &unserved) {
			return err
		}
	}
	return nil
}
