package jigsaw

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/permlab/permlab/internal/mdtable"
)

// TestReadmeNumbers checks every row of the README's tables that names a
// results file (a "file" column holding `results/….json`) against that
// file: each metric column must be the file's value rounded to the
// digits printed.
func TestReadmeNumbers(t *testing.T) {
	tables, err := mdtable.Read("README.md")
	if err != nil {
		t.Fatal(err)
	}
	metric := map[string]string{
		"Kendall tau":                 "kendall_tau",
		"prop. wrong":                 "prop_wrong",
		"l1":                          "l1",
		"l2 (RMSE)":                   "l2_rmse",
		"prop. wrong up to identical": "prop_wrong_identical",
	}
	rows := 0
	for _, tab := range tables {
		fc := tab.Column("file")
		if fc < 0 {
			continue
		}
		for r, row := range tab.Rows {
			file := strings.Trim(row[fc], "`")
			if !strings.HasSuffix(file, ".json") {
				continue
			}
			var res struct {
				Metrics map[string]float64 `json:"metrics"`
			}
			b, err := os.ReadFile(filepath.FromSlash(file))
			if err != nil {
				t.Fatalf("README.md:%d: %v", tab.Lines[r], err)
			}
			if err := json.Unmarshal(b, &res); err != nil {
				t.Fatalf("README.md:%d: %s: %v", tab.Lines[r], file, err)
			}
			checked := 0
			for c, name := range tab.Header {
				key, ok := metric[name]
				if !ok {
					continue
				}
				v, ok := res.Metrics[key]
				if !ok {
					t.Fatalf("README.md:%d: %s has no %s", tab.Lines[r], file, key)
				}
				match, err := mdtable.Matches(row[c], v)
				if err != nil {
					t.Fatalf("README.md:%d: %v", tab.Lines[r], err)
				}
				if !match {
					t.Errorf("README.md:%d: %s is %s, %s has %v", tab.Lines[r], name, row[c], file, v)
				}
				checked++
			}
			if checked == 0 {
				t.Errorf("README.md:%d: no metric column checked against %s", tab.Lines[r], file)
			}
			rows++
		}
	}
	if rows < 20 {
		t.Errorf("checked %d rows naming a results file, want the 23 of the tuning tables", rows)
	}
}
