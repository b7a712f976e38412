package sorting

import (
	"encoding/json"
	"errors"
	"math"
	"testing"

	"github.com/permlab/permlab/internal/mdtable"
)

// TestReadmeNumbers checks every row of the README's tables that names a
// JSON results file (a "file" column holding `results/….json`) against
// that file's first test interval: each metric column must be the file's
// value rounded to the digits printed, and "kept step" the step kept (the
// last step for a run without -val-every).
func TestReadmeNumbers(t *testing.T) {
	rows, diffs, err := mdtable.CheckFiles("README.md", ".json", func(b []byte) (map[string]float64, error) {
		var res struct {
			KeptStep *float64             `json:"kept_step"`
			Steps    float64              `json:"steps"`
			Results  []map[string]float64 `json:"results"`
		}
		if err := json.Unmarshal(b, &res); err != nil {
			return nil, err
		}
		if len(res.Results) == 0 {
			return nil, errors.New("no results")
		}
		values := map[string]float64{"kept step": res.Steps}
		if res.KeptStep != nil {
			values["kept step"] = *res.KeptStep
		}
		for name, key := range map[string]string{"prop. any wrong": "prop_any_wrong", "prop. wrong": "prop_wrong", "Kendall tau": "kendall_tau"} {
			values[name] = math.NaN()
			if v, ok := res.Results[0][key]; ok {
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
	if rows < 40 {
		t.Errorf("checked %d rows naming a results file, want at least 40", rows)
	}
}
