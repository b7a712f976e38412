package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeSeedShare checks that the share of training seeds in
// networks/sorting/README.md is what the README's command prints from the
// committed results file (training nothing), so that no number in it is
// copied by hand.
func TestReadmeSeedShare(t *testing.T) {
	dir := filepath.Join("..", "..", "networks", "sorting")
	results := filepath.Join(dir, "results", "seed_share.jsonl")
	done, err := readRecords(results)
	if err != nil {
		t.Fatal(err)
	}
	if len(done) != 80 {
		t.Fatalf("%d networks in %s, want 80 (2 sizes × 2 networks × 20 seeds)", len(done), results)
	}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"-table1", "-ns", "10,80", "-seeds", "20", "-test", "0:1,2:3,1000:1001",
		"-test-lists", "2000", "-seed-share", "-results", results}, &stdout, &stderr)
	if code != 0 || strings.Contains(stderr.String(), "step") {
		t.Fatalf("status %d, and it trained (or failed):\n%s", code, stderr.String())
	}
	out := stdout.String()
	at := strings.Index(out, "Share of training seeds")
	if at < 0 {
		t.Fatalf("no share of seeds in the output:\n%s", out)
	}
	share := out[at:]
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), share) {
		t.Errorf("README.md does not hold the share of seeds as the command prints it:\n%s", share)
	}
}
