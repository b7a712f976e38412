package jsonl

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

// FuzzRead checks that Read never panics on any file, and that Append
// keeps every value Read returned: after it, Read gives the same values and
// the new one.
func FuzzRead(f *testing.F) {
	f.Add([]byte("{\"n\":1,\"s\":\"x\"}\n{\"n\":2,\"s\":\"y\"}\n"))         // valid
	f.Add([]byte("{\"n\":1,\"s\":\"x\"}\n{\"n\": 7, \"s"))                  // torn last line
	f.Add([]byte("{\"n\":1,\"s\":\"x\"}\n{\"n\":2}"))                       // whole last line, no newline
	f.Add([]byte("{bad\n{\"n\": 1}\n"))                                     // damaged first line
	f.Add([]byte("{\"n\": 1}\n{bad\n"))                                     // damaged last line with newline
	f.Add([]byte("{\"n\": \"one\"}\n"))                                     // wrong type
	f.Add([]byte("{\"n\": 1e999}\n"))                                       // out of range
	f.Add([]byte("{\"n\": NaN}\n"))                                         // NaN is not JSON
	f.Add([]byte("\n\r\n  \n{\"n\":3}\r\n"))                                // blank lines, CRLF
	f.Add([]byte("[1,2]\n\"s\"\nnull\n"))                                   // other JSON values
	f.Add([]byte("{\"n\":1} {\"n\":2}\n"))                                  // two values on a line
	f.Add([]byte{0xff, 0xfe, 0x00, '{', '\n'})                              // garbage
	f.Add([]byte("{\"n\":1,\"s\":\"" + string(make([]byte, 4096)) + "\"}")) // long line
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "r.jsonl")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, _ = Read[any](path)
		got, err := Read[rec](path)
		if err != nil {
			return
		}
		add := rec{N: -1, S: "appended"}
		if err := Append(path, add); err != nil {
			t.Fatal(err)
		}
		again, err := Read[rec](path)
		if err != nil {
			t.Fatalf("Read accepted the file, but not after Append: %v", err)
		}
		if want := append(slices.Clone(got), add); !reflect.DeepEqual(again, want) {
			t.Fatalf("after Append, Read gives %v, want %v", again, want)
		}
	})
}
