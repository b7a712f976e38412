package jigsaw

import (
	"encoding/json"
	"testing"

	"github.com/permlab/permlab/internal/mdtable"
)

// TestReadmeNumbers checks every row of the README's tables that names a
// results file (a "file" column holding `results/….json`) against that
// file: each metric column must be the file's value rounded to the
// digits printed.
func TestReadmeNumbers(t *testing.T) {
	metric := map[string]string{
		"Kendall tau":                 "kendall_tau",
		"prop. wrong":                 "prop_wrong",
		"l1":                          "l1",
		"l2 (RMSE)":                   "l2_rmse",
		"prop. wrong up to identical": "prop_wrong_identical",
	}
	rows, diffs, err := mdtable.CheckFiles("README.md", ".json", func(b []byte) (map[string]float64, error) {
		var res struct {
			Metrics map[string]float64 `json:"metrics"`
		}
		if err := json.Unmarshal(b, &res); err != nil {
			return nil, err
		}
		values := map[string]float64{}
		for name, key := range metric {
			if v, ok := res.Metrics[key]; ok {
				values[name] = v
			}
		}
		return values, nil
	})
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	for _, d := range diffs {
		t.Error("README.md " + d)
	}
	if rows < 30 {
		t.Errorf("checked %d rows naming a results file, want at least 30", rows)
	}
}
