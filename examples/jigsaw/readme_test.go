package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// inReadme names the results files whose Table 2 must be in
// networks/jigsaw/README.md itself: the paper's network at the command's
// defaults and our best (6 × 6, where the work ended). The README's table
// of our best at each size names the others, and networks/jigsaw's
// TestReadmeNumbers checks it against them.
var inReadme = []string{
	"table2.jsonl",
	"table2_decoded_48000steps_pairs_unary_anneal6to3.jsonl",
}

// TestReadmeTables checks that every Table 2 that a committed
// results/table2*.jsonl file holds is printed exactly as -table2 prints it
// from that file, in networks/jigsaw/README.md or in its results log
// networks/jigsaw/results/NOTES.md, so no number in those tables is copied
// by hand; and that the tables of inReadme are in the README.
func TestReadmeTables(t *testing.T) {
	dir := filepath.Join("..", "..", "networks", "jigsaw")
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	notes, err := os.ReadFile(filepath.Join(dir, "results", "NOTES.md"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "results", "table2*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no results/table2*.jsonl files (%v)", err)
	}
	required := map[string]bool{}
	for _, name := range inReadme {
		required[name] = true
	}
	for _, f := range files {
		name := filepath.Base(f)
		if name == "table2_decoded_p4_2cores.jsonl" {
			continue // a rerun on two cores, compared with the 16-core one by networks/jigsaw's TestDecodedOnTwoCores
		}
		recs, err := readRecords(f)
		if err != nil {
			t.Fatal(err)
		}
		table := formatTable(recs)
		switch {
		case required[name]:
			delete(required, name)
			if !strings.Contains(string(readme), table) {
				t.Errorf("README.md does not hold the table of %s as -table2 prints it:\n%s", name, table)
			}
		case !strings.Contains(string(readme), table) && !strings.Contains(string(notes), table):
			t.Errorf("neither README.md nor results/NOTES.md holds the table of %s as -table2 prints it:\n%s", name, table)
		}
	}
	for name := range required {
		t.Errorf("results/%s, whose table README.md must hold, is not there", name)
	}
}
