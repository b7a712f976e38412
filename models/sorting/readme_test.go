package sorting

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/permlab/permlab/internal/mdtable"
)

// TestReadmeNumbers checks every row of the README's tables that names a
// JSON results file (a "file" column holding `results/….json`) against
// that file's first test interval: each metric column must be the file's
// value rounded to the digits printed, and "kept step" the step kept.
func TestReadmeNumbers(t *testing.T) {
	tables, err := mdtable.Read("README.md")
	if err != nil {
		t.Fatal(err)
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
				KeptStep *float64             `json:"kept_step"`
				Steps    float64              `json:"steps"`
				Results  []map[string]float64 `json:"results"`
			}
			b, err := os.ReadFile(filepath.FromSlash(file))
			if err != nil {
				t.Fatalf("README.md:%d: %v", tab.Lines[r], err)
			}
			if err := json.Unmarshal(b, &res); err != nil || len(res.Results) == 0 {
				t.Fatalf("README.md:%d: %s: no results (%v)", tab.Lines[r], file, err)
			}
			values := map[string]*float64{}
			for name, key := range map[string]string{"prop. any wrong": "prop_any_wrong", "prop. wrong": "prop_wrong", "Kendall tau": "kendall_tau"} {
				if v, ok := res.Results[0][key]; ok {
					values[name] = &v
				}
			}
			// Without -val-every the weights kept are the last step's.
			if res.KeptStep == nil {
				res.KeptStep = &res.Steps
			}
			values["kept step"] = res.KeptStep
			checked := 0
			for c, name := range tab.Header {
				v, known := values[name]
				if !known || row[c] == "" {
					continue
				}
				if v == nil {
					t.Errorf("README.md:%d: %s has no value for %q", tab.Lines[r], file, name)
					continue
				}
				match, err := mdtable.Matches(row[c], *v)
				if err != nil {
					t.Fatalf("README.md:%d: %v", tab.Lines[r], err)
				}
				if !match {
					t.Errorf("README.md:%d: %s is %s, %s has %v", tab.Lines[r], name, row[c], file, *v)
				}
				checked++
			}
			if checked == 0 {
				t.Errorf("README.md:%d: no column checked against %s", tab.Lines[r], file)
			}
			rows++
		}
	}
	if rows < 10 {
		t.Errorf("checked %d rows naming a results file, want at least 10", rows)
	}
}
