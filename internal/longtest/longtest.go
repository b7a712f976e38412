// Package longtest marks the tests that a plain go test ./... skips: the
// long reproductions and the benchmark harnesses' end-to-end runs, which
// would make the suite too slow to run at every change. They run when the
// tests are built with the tag long,
//
//	go test -tags long ./benchmarks/vicheck ./examples/tutorial ...
//
// and CI runs them in a stage of their own (.ci/run).
package longtest

import "testing"

// Skip skips t unless the tests are built with the tag long, saying why it
// is long and how to run it.
func Skip(t testing.TB, why string) {
	t.Helper()
	if !Enabled {
		t.Skip(why + " (a long test: run it with go test -tags long)")
	}
}
