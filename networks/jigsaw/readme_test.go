package jigsaw_test

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"

	"github.com/permlab/permlab/internal/jsonl"
	"github.com/permlab/permlab/internal/mdtable"
	"github.com/permlab/permlab/networks/jigsaw/decode"
)

// TestReadmeNumbers checks every row of the README's tables that names a
// results file (a "file" column holding `results/….json`) against that
// file: each metric column must be the file's value rounded to the
// digits printed. The columns "solved", "search misses" and "score misses"
// are shares of the puzzles of the file's search gap (decode.SearchGap),
// "mean score" its mean decoded score, and "start temperature", "end
// temperature" and "proposals" the annealing of the file's decoder, and
// "critic weight" its weight of the critic.
func TestReadmeNumbers(t *testing.T) {
	metric := map[string]string{
		"Kendall tau":                     "kendall_tau",
		"prop. wrong":                     "prop_wrong",
		"prop. any wrong":                 "prop_any_wrong",
		"l1":                              "l1",
		"l2 (RMSE)":                       "l2_rmse",
		"prop. wrong up to identical":     "prop_wrong_identical",
		"prop. any wrong up to identical": "prop_any_wrong_identical",
	}
	rows, diffs, err := mdtable.CheckFiles("README.md", ".json", func(b []byte) (map[string]float64, error) {
		var res struct {
			Metrics map[string]float64 `json:"metrics"`
			Search  *decode.Gap        `json:"search"`
			Decoder *decode.Decoder    `json:"decoder"`
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
		values["solved"], values["search misses"], values["score misses"] = math.NaN(), math.NaN(), math.NaN()
		values["mean score"] = math.NaN()
		values["start temperature"], values["end temperature"], values["proposals"] = math.NaN(), math.NaN(), math.NaN()
		if g := res.Search; g != nil && g.Puzzles > 0 {
			n := float64(g.Puzzles)
			values["solved"] = float64(g.Solved) / n
			values["search misses"] = float64(g.SearchMisses) / n
			values["score misses"] = float64(g.ScoreMisses) / n
			if g.MeanScore != 0 {
				values["mean score"] = g.MeanScore
			}
		}
		values["critic weight"] = math.NaN()
		if d := res.Decoder; d != nil {
			values["start temperature"], values["end temperature"] = d.Temps()
			values["proposals"] = float64(d.Anneal)
			values["critic weight"] = d.CriticWeight // 0: no critic
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

// TestDecodedOnTwoCores checks the README's claim that decoding the 4 × 4
// test puzzles on two cores gave the metrics of the 16-core run to the
// last bit.
func TestDecodedOnTwoCores(t *testing.T) {
	read := func(path string) map[int]map[string]any {
		recs, err := jsonl.Read[map[string]any](path)
		if err != nil {
			t.Fatal(err)
		}
		out := map[int]map[string]any{}
		for _, r := range recs {
			out[int(r["p"].(float64))] = r
		}
		return out
	}
	many, two := read("results/table2_decoded.jsonl"), read("results/table2_decoded_p4_2cores.jsonl")
	if g := two[4]["gomaxprocs"]; g != 2.0 {
		t.Fatalf("the two-core record ran with GOMAXPROCS %v", g)
	}
	if g := many[4]["gomaxprocs"]; g == 2.0 {
		t.Fatalf("the table's 4 x 4 record ran with GOMAXPROCS 2 too")
	}
	if !reflect.DeepEqual(many[4]["metrics"], two[4]["metrics"]) {
		t.Errorf("4 x 4 metrics differ:\n%v\n%v", many[4]["metrics"], two[4]["metrics"])
	}
}
