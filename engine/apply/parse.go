package apply

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/resource"
	"k8s.io/kubectl/pkg/validation"
)

// Object is one object of a manifest, decoded, with the manifest it came from.
type Object struct {
	*unstructured.Unstructured
	// Source names the manifest in errors: its path, its URL or "STDIN",
	// as kubectl does.
	Source string
}

// Parse decodes a manifest of one or more YAML or JSON documents, Lists
// flattened, as `kubectl apply -f` does (cli-runtime's resource.Builder,
// without a server). source names the manifest in errors.
func Parse(data []byte, source string) ([]Object, error) {
	return decode(localBuilder().Stream(bytes.NewReader(data), source))
}

// Read reads and decodes the manifests opts names as `kubectl apply -f`
// finds them: "-" is standard input, an http(s) address is fetched, a path
// that does not exist is a glob pattern, a directory gives its .yaml, .yml
// and .json files in lexical order (its subdirectories' too with
// Recursive), a file named explicitly is read whatever its extension.
func Read(opts resource.FilenameOptions) ([]Object, error) {
	return decode(localBuilder().FilenameParam(false, &opts))
}

// localBuilder is kubectl apply's builder with nothing asked of a server:
// the cluster may not be up yet, and kinds are mapped when applying.
func localBuilder() *resource.Builder {
	return resource.NewLocalBuilder().Unstructured().Schema(kindsSet).ContinueOnError().Flatten()
}

// kindsSet is kubectl's client-side validation (--validate=strict, its
// default) against a server that validates fields itself, as every server
// since v1.27 does: apiVersion and kind must be set; the rest is the
// server's to check, with fieldValidation=Strict (see Applier).
var kindsSet = validation.NewParamVerifyingSchema(validation.NullSchema{}, serverValidates{}, metav1.FieldValidationStrict)

// serverValidates is a resource.Verifier for a server that supports field
// validation for every kind.
type serverValidates struct{}

func (serverValidates) HasSupport(schema.GroupVersionKind) error { return nil }

// validateHint is the advice cli-runtime appends to a validation error;
// podtrace has no --validate flag to follow it with.
const validateHint = "; if you choose to ignore these errors, turn validation off with --validate=false"

// decode runs b and returns its objects in order, or its errors (all of
// them, as kubectl reports them, on one line).
func decode(b *resource.Builder) ([]Object, error) {
	infos, err := b.Do().Infos()
	if err != nil {
		return nil, errors.New(strings.ReplaceAll(err.Error(), validateHint, ""))
	}
	if len(infos) == 0 {
		return nil, errors.New("no objects passed to apply")
	}
	out := make([]Object, len(infos))
	for i, info := range infos {
		u, ok := info.Object.(*unstructured.Unstructured)
		if !ok {
			return nil, fmt.Errorf("unable to decode %q: %T is not an object", info.Source, info.Object)
		}
		out[i] = Object{Unstructured: u, Source: info.Source}
	}
	return out, nil
}
