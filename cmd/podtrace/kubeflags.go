package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
)

// connectionFlags registers kubectl's own flags that pick and reach a
// cluster (--kubeconfig, --context, --cluster, --user, --server, --token,
// --as, --as-group, --request-timeout, ...); with namespace, -n/--namespace too.
func connectionFlags(fs *pflag.FlagSet, namespace bool) *genericclioptions.ConfigFlags {
	f := genericclioptions.NewConfigFlags(true)
	f.CacheDir = nil // podtrace reads no discovery
	if !namespace {
		f.Namespace = nil
	}
	f.AddFlags(fs)
	return f
}

// restConfig loads the cluster the flags pick, as kubectl does, and returns
// its client config (sending userAgent), the context's name, and the
// namespace (-n, else the context's, else default). Errors are one line.
func restConfig(f *genericclioptions.ConfigFlags, userAgent string) (*rest.Config, string, string, error) {
	if path := *f.KubeConfig; path != "" {
		if _, err := os.Stat(path); err != nil {
			return nil, "", "", fmt.Errorf("kubeconfig %s: %w", path, errors.Unwrap(err))
		}
	}
	loader := f.ToRawKubeConfigLoader()
	raw, err := loader.RawConfig()
	if err != nil {
		return nil, "", "", fmt.Errorf("kubeconfig: %s", oneLine(err))
	}
	name := raw.CurrentContext
	if *f.Context != "" {
		name = *f.Context
	}
	cfg, err := loader.ClientConfig()
	if err != nil {
		return nil, "", "", fmt.Errorf("kubeconfig: %s", oneLine(err))
	}
	ns, _, err := loader.Namespace()
	if err != nil || ns == "" {
		ns = "default"
	}
	if name == "" {
		name = cfg.Host
	}
	cfg.UserAgent = userAgent
	if t := *f.Timeout; t == "" || t == "0" {
		cfg.Timeout = 30 * time.Second // unless --request-timeout says otherwise
	}
	return cfg, name, ns, nil
}
