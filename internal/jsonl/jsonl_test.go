package jsonl

import (
	"os"
	"path/filepath"
	"testing"
)

type rec struct {
	N int    `json:"n"`
	S string `json:"s"`
}

func TestAppendReadAndTornLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "r.jsonl")
	if got, err := Read[rec](path); err != nil || got != nil {
		t.Fatalf("missing file: %v, %v", got, err)
	}
	for i := range 2 {
		if err := Append(path, rec{N: i, S: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"n": 7, "s`)
	f.Close()
	got, err := Read[rec](path)
	if err != nil || len(got) != 2 || got[1].N != 1 {
		t.Fatalf("torn last line: %v, %v; want the 2 whole records", got, err)
	}
	if err := Append(path, rec{N: 2}); err != nil {
		t.Fatal(err)
	}
	got, err = Read[rec](path)
	if err != nil || len(got) != 3 || got[2].N != 2 {
		t.Fatalf("append after a torn line: %v, %v; want 3 records", got, err)
	}
	os.WriteFile(path, []byte("{bad\n{\"n\": 1}\n"), 0o644)
	if _, err := Read[rec](path); err == nil {
		t.Error("a damaged line that is not the last: no error")
	}
	os.WriteFile(path, []byte("{\"n\": 1}\n{bad\n"), 0o644)
	if _, err := Read[rec](path); err == nil {
		t.Error("a damaged last line that ends in a newline is not an interrupted append: no error")
	}
}
