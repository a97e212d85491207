// Package repotest holds tests of the repository as a whole rather than of
// one package: no large files tracked by git, and the import rules between
// podtrace's layers (stages, engine, tui, themes, cmd/podtrace). It has no
// code of its own; run it with `go test ./internal/repotest`.
package repotest
