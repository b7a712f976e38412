package sorting

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/permlab/permlab/internal/mdtable"
)

// TestReadmeNumbers checks every row of the tables of README.md and of
// results/NOTES.md (the log of attempts behind it) that names a JSON
// results file (a "file" column holding its path, relative to the
// Markdown file) against that file: "prop. any wrong", "prop. wrong" and
// "Kendall tau" must be the file's values for its first test interval
// rounded to the digits printed, a column named after an interval
// ("U(0,10)") its prop. any wrong on that interval, "Kendall tau U(0,1)"
// its Kendall tau on U(0,1), and "kept step" the step kept (the last step
// for a run without -val-every). Each document must hold at least its
// minimum of such rows, so that the README keeps the validation runs its
// settings were chosen on.
func TestReadmeNumbers(t *testing.T) {
	for _, doc := range []struct {
		path string
		min  int
	}{
		{"README.md", 10},
		{"results/NOTES.md", 50},
	} {
		rows, diffs, err := mdtable.CheckFiles(doc.path, ".json", readmeValues)
		if err != nil {
			t.Fatalf("%s: %v", doc.path, err)
		}
		for _, d := range diffs {
			t.Error(doc.path + " " + d)
		}
		if rows < doc.min {
			t.Errorf("%s: checked %d rows naming a results file, want at least %d", doc.path, rows, doc.min)
		}
	}
}

// readmeValues returns the values of a results file (the JSON output of
// examples/sorting) by the column headers of TestReadmeNumbers.
func readmeValues(b []byte) (map[string]float64, error) {
	var res struct {
		KeptStep *float64 `json:"kept_step"`
		Steps    float64  `json:"steps"`
		Results  []struct {
			Low          float64  `json:"low"`
			High         float64  `json:"high"`
			PropAnyWrong *float64 `json:"prop_any_wrong"`
			PropWrong    *float64 `json:"prop_wrong"`
			KendallTau   *float64 `json:"kendall_tau"`
		} `json:"results"`
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
	value := func(p *float64) float64 {
		if p == nil {
			return math.NaN()
		}
		return *p
	}
	first := res.Results[0]
	values["prop. any wrong"] = value(first.PropAnyWrong)
	values["prop. wrong"] = value(first.PropWrong)
	values["Kendall tau"] = value(first.KendallTau)
	for _, r := range res.Results {
		iv := fmt.Sprintf("U(%g,%g)", r.Low, r.High)
		values[iv] = value(r.PropAnyWrong)
		values["Kendall tau "+iv] = value(r.KendallTau)
	}
	return values, nil
}
