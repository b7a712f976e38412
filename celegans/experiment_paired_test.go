package celegans

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pairedSummary returns a summary of one Table 3 cell and two methods whose
// runs of seeds 1 to len(acc) have the given accuracies (unknown: half).
func pairedSummary(acc map[Method][]float64) *Summary {
	s := &Summary{Connectome: "c", Neurons: 10, T: 5, Seeds: 3, SeedStart: 1,
		Methods: []Method{GumbelSinkhorn, MCMC},
		Cells:   []CellInfo{{Key: "t3/x", Table: 3, Label: "x", Header: "X"}}}
	for _, m := range s.Methods {
		s.Entries = append(s.Entries, Entry{Cell: "t3/x", Method: m, Runs: len(acc[m])})
		for i, a := range acc[m] {
			s.records = append(s.records, &Record{Cell: "t3/x", Table: 3, Seed: 1 + i, Method: m, Accuracy: a, AccuracyUnknown: a / 2})
		}
	}
	return s
}

func TestPairedMarkdown(t *testing.T) {
	on := pairedSummary(map[Method][]float64{GumbelSinkhorn: {0.90, 0.80, 0.70}, MCMC: {0.50, 0.52, 0.40}})
	off := pairedSummary(map[Method][]float64{GumbelSinkhorn: {0.80, 0.70, 0.61}, MCMC: {0.50, 0.50, 0.44}})
	text, err := on.PairedMarkdown(off, "on", "off")
	require.NoError(t, err)
	// Gumbel-Sinkhorn: differences 0.10, 0.10, 0.09: mean 0.0967, sd 0.00577,
	// t(0.975; 2) = 4.303, half-width 4.303·0.00577/√3 = 0.0143: marked.
	// MCMC: 0, 0.02, −0.04: mean −0.0067, sd 0.0306, half-width 0.0759.
	assert.Contains(t, text, "| Gumbel-Sinkhorn | +0.097 ± 0.014 * |")
	assert.Contains(t, text, "| MCMC | -0.007 ± 0.076 |")
	// Over the unknown neurons every difference halves, and so does the interval.
	assert.Contains(t, text, "| Gumbel-Sinkhorn | +0.048 ± 0.007 * |")
	assert.Contains(t, text, "2 of 4 intervals exclude 0")
	assert.Contains(t, text, "### Table 3 (4 worms; known neurons and candidate width): on − off, accuracy over all neurons")

	// A seed that only one side ran is left out.
	short := pairedSummary(map[Method][]float64{GumbelSinkhorn: {0.80, 0.70}, MCMC: {0.5}})
	text, err = on.PairedMarkdown(short, "on", "off")
	require.NoError(t, err)
	assert.Contains(t, text, "| Gumbel-Sinkhorn | +0.100 ± 0.000 * [n=2] |")
	assert.Contains(t, text, "| MCMC | +0.000 [n=1] |")
	assert.NotContains(t, text, "NaN")

	// Grids that differ are refused.
	other := pairedSummary(map[Method][]float64{GumbelSinkhorn: {0.8}, MCMC: {0.5}})
	other.Cells[0].Key = "t3/y"
	_, err = on.PairedMarkdown(other, "on", "off")
	assert.ErrorContains(t, err, "cell 0 is t3/x against t3/y")
	other = pairedSummary(map[Method][]float64{GumbelSinkhorn: {0.8}, MCMC: {0.5}})
	other.Methods = []Method{MCMC, GumbelSinkhorn}
	_, err = on.PairedMarkdown(other, "on", "off")
	assert.ErrorContains(t, err, "methods")
	other = pairedSummary(map[Method][]float64{GumbelSinkhorn: {0.8}, MCMC: {0.5}})
	other.Neurons = 11
	_, err = on.PairedMarkdown(other, "on", "off")
	assert.ErrorContains(t, err, "different problems")
}
