package main

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/permlab/permlab/models/vae"
	"github.com/permlab/permlab/nn"
)

// TestReportPairs pairs float32 runs with the float64 runs of their seeds
// and checks the differences, their mean ± se and the divergence table,
// and that a run without a partner is an error.
func TestReportPairs(t *testing.T) {
	runs, against := t.TempDir(), t.TempDir()
	f32 := vae.DefaultConfig()
	f32.Precision = nn.Float32
	for _, r := range []struct {
		seed         uint64
		iw64, iw32   float64
		elbo64, el32 float64
		loss64       []float64
		loss32       []float64
	}{
		{1, 90.0, 90.1, 99, 99.4, []float64{170, 110, 100, 95, 93, 92}, []float64{170.5, 110, 100, 95, 93.2, 92.3}},
		{2, 90.2, 90.5, 99.5, 99.5, []float64{172, 111, 100, 95, 94, 92.4}, []float64{171.5, 111, 100, 95, 93.6, 92.2}},
	} {
		writeSummary(t, filepath.Join(against, fmt.Sprintf("gs_seed%d.json", r.seed)), summary{Estimator: "gumbel-softmax", Config: vae.DefaultConfig(),
			Seed: r.seed, Epochs: 6, EvalSplit: "test", TrainLoss: r.loss64, Test: &vae.Eval{Images: 100, K: 10, NegLogPx: r.iw64, NegELBO: r.elbo64}})
		writeSummary(t, filepath.Join(runs, fmt.Sprintf("gs_seed%d.json", r.seed)), summary{Estimator: "gumbel-softmax", Config: f32,
			Seed: r.seed, Epochs: 6, EvalSplit: "test", TrainLoss: r.loss32, Test: &vae.Eval{Images: 100, K: 10, NegLogPx: r.iw32, NegELBO: r.el32}})
	}
	// A run with AIS is not paired (nor needs a partner).
	writeSummary(t, filepath.Join(runs, "ais.json"), summary{Estimator: "gumbel-softmax", Config: f32, Seed: 3, Epochs: 6, EvalSplit: "test",
		Test: &vae.Eval{Images: 100, K: 10}, AIS: &vae.AISEval{Images: 100, Steps: 10, Chains: 2}})
	var out bytes.Buffer
	o, err := parseFlags([]string{"-report", runs, "-against", against}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeReport(o, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		// IW differences 0.1 and 0.3: mean 0.2, sd 0.1414, se 0.1; −ELBO 0.4 and 0: mean 0.2, se 0.2.
		"| gumbel-softmax (float32) | gumbel-softmax | – | 1, 2 | +0.10 / +0.30 | +0.20 ± 0.10 | +0.40 / +0.00 | +0.20 ± 0.20 |\n",
		// |differences| at epoch 1: 0.5, 0.5; epoch 5: 0.2, 0.4; epoch 6: 0.3, 0.2.
		// The float64 runs' sd: epoch 1 1.414, epoch 5 0.707, epoch 6 0.283.
		"| gumbel-softmax (float32) | gumbel-softmax | – | 1, 2 | 1 / 5 / 6: 0.500 / 0.300 / 0.250 | 1.414 / 0.707 / 0.283 |\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks\n%s\ngot\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "all pairs") {
		t.Errorf("one group has an all-pairs row:\n%s", out.String())
	}

	writeSummary(t, filepath.Join(runs, "gs_seed4.json"), summary{Estimator: "gumbel-softmax", Config: f32, Seed: 4, Epochs: 6, EvalSplit: "test",
		Test: &vae.Eval{Images: 100, K: 10}})
	if err := writeReport(o, io.Discard); err == nil || !strings.Contains(err.Error(), "seed 4") {
		t.Errorf("a run without a partner: err %v", err)
	}
	if _, err := parseFlags([]string{"-against", against}, io.Discard); err == nil {
		t.Error("-against without -report: no error")
	}
}
