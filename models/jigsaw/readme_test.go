package jigsaw

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/permlab/permlab/internal/mdtable"
)

// TestReadmeNumbers checks every row of the README's tables that names a
// results file (a "file" column holding `results/….json`) against that
// file: each metric column must be the file's value rounded to the
// digits printed.
func TestReadmeNumbers(t *testing.T) {
	rows, err := mdtable.FileRows("README.md", ".json")
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
	for _, row := range rows {
		var res struct {
			Metrics map[string]float64 `json:"metrics"`
		}
		b, err := os.ReadFile(filepath.FromSlash(row.Path))
		if err == nil {
			err = json.Unmarshal(b, &res)
		}
		if err != nil {
			t.Fatalf("README.md:%d: %v", row.Line, err)
		}
		values := map[string]float64{}
		for name, key := range metric {
			if v, ok := res.Metrics[key]; ok {
				values[name] = v
			}
		}
		diffs, checked, err := row.Compare(values)
		if err != nil {
			t.Fatalf("README.md: %v", err)
		}
		for _, d := range diffs {
			t.Error("README.md " + d)
		}
		if checked == 0 {
			t.Errorf("README.md:%d: no metric column checked against %s", row.Line, row.Path)
		}
	}
	if len(rows) < 30 {
		t.Errorf("checked %d rows naming a results file, want the 32 of the validation tables", len(rows))
	}
}
