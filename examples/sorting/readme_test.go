package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sortingDir is networks/sorting, whose README.md and results/NOTES.md
// quote the tables the command prints.
var sortingDir = filepath.Join("..", "..", "networks", "sorting")

// printTable runs the command on a committed results file with a
// cancelled context, so that it can train nothing: a network missing from
// the file stops it with an error instead of being trained. It returns
// what the command prints from the first line starting with from.
func printTable(t *testing.T, args []string, from string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, args, &stdout, &stderr)
	if code != 0 || strings.Contains(stderr.String(), "step") {
		t.Fatalf("%v: status %d, and it would have trained (or failed):\n%s", args, code, stderr.String())
	}
	out := stdout.String()
	at := strings.Index(out, from)
	if at < 0 {
		t.Fatalf("%v: no %q in the output:\n%s", args, from, out)
	}
	return out[at:]
}

// readDoc returns the text of a document under networks/sorting.
func readDoc(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(sortingDir, filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestReadmeSeedShare checks that the share of training seeds in
// networks/sorting/README.md is what the README's command prints from the
// committed results file (training nothing), so that no number in it is
// copied by hand.
func TestReadmeSeedShare(t *testing.T) {
	results := filepath.Join(sortingDir, "results", "seed_share.jsonl")
	done, err := readRecords(results)
	if err != nil {
		t.Fatal(err)
	}
	if len(done) != 80 {
		t.Fatalf("%d networks in %s, want 80 (2 sizes × 2 networks × 20 seeds)", len(done), results)
	}
	share := printTable(t, []string{"-table1", "-ns", "10,80", "-seeds", "20", "-test", "0:1,2:3,1000:1001",
		"-test-lists", "2000", "-seed-share", "-results", results}, "Share of training seeds")
	if !strings.Contains(readDoc(t, "README.md"), share) {
		t.Errorf("README.md does not hold the share of seeds as the command prints it:\n%s", share)
	}
}

// TestReadmeTable1 checks that each Table 1 grid quoted in
// networks/sorting/README.md and results/NOTES.md is what the command
// that made it prints from its committed results file (training nothing):
// the grid of the command's defaults in the README, the earlier grids in
// the log of attempts.
func TestReadmeTable1(t *testing.T) {
	results := filepath.Join(sortingDir, "results")
	for _, tc := range []struct {
		doc  string
		args []string
	}{
		{"README.md", []string{"-ns", "5,10,15,80,100,120", "-seeds", "3", "-iters", "30", "-noise", "0.3", "-steps", "400",
			"-val-every", "50", "-val-seed", "99", "-val-lists", "200", "-test-lists", "2000",
			"-results", filepath.Join(results, "table1_L30_noise0.3_400steps.jsonl")}},
		{"results/NOTES.md", []string{"-ns", "80,100,120", "-seeds", "2", "-iters", "20", "-noise", "0.3", "-steps", "400",
			"-val-every", "50", "-val-seed", "99", "-val-lists", "200", "-test-lists", "2000",
			"-results", filepath.Join(results, "table1_L20_noise0.3_400steps.jsonl")}},
		{"results/NOTES.md", []string{"-iters", "10", "-noise", "1", "-steps", "0", "-val-every", "0",
			"-seeds", "2", "-test-lists", "2000", "-results", filepath.Join(results, "table1.jsonl")}},
	} {
		table := printTable(t, append([]string{"-table1"}, tc.args...), "Prop. any wrong")
		if !strings.Contains(readDoc(t, tc.doc), table) {
			t.Errorf("%s does not hold the table of %v as the command prints it:\n%s", tc.doc, tc.args, table)
		}
	}
}
