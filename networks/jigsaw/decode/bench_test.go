package decode

import (
	"math/rand/v2"
	"testing"

	"github.com/permlab/permlab/networks/jigsaw"
)

// BenchmarkCriticScores measures the critic of the 24 px cut on the 205
// candidate images the reranking scores for one 3 × 3 puzzle; the
// reported images/s is the rate the reranking can reach.
func BenchmarkCriticScores(b *testing.B) {
	g, err := jigsaw.NewGridCrop(1, 28, 28, 3, 24)
	if err != nil {
		b.Fatal(err)
	}
	c, err := NewCritic(g, 1)
	if err != nil {
		b.Fatal(err)
	}
	imgs := randomImages(rand.New(rand.NewPCG(1, 2)), 205, 1, 24, 24)
	b.ResetTimer()
	for range b.N {
		if _, err := c.Scores(imgs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(205*b.N)/b.Elapsed().Seconds(), "images/s")
}
