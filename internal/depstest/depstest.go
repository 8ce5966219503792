// Package depstest checks in tests what a package links: the dependency rules of the
// module (which package may import which, what a single-database application pulls in)
// are asserted with `go list -deps`, so that they hold as the code grows.
package depstest

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// Deps returns the import paths of pkg and everything it imports, non-test files only,
// as `go list -deps pkg` prints them (pkg as the go command takes it: "." is the
// package of the test's working directory). It fails t if the go command fails or
// lists implausibly few packages.
func Deps(t testing.TB, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "fmt") && !slices.Contains(deps, "errors") {
		t.Fatalf("go list -deps %s lists neither fmt nor errors, implausible:\n%s", pkg, out)
	}
	return deps
}

// Forbid fails t for each package of Deps(t, pkg) that is one of forbidden or lies
// under one of them (a module or package path prefix followed by "/").
func Forbid(t testing.TB, pkg string, forbidden ...string) {
	t.Helper()
	for _, d := range Deps(t, pkg) {
		for _, f := range forbidden {
			if d == f || strings.HasPrefix(d, f+"/") {
				t.Errorf("%s depends on %s (forbidden: %s)", pkg, d, f)
			}
		}
	}
}
