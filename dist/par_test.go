package dist

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/internal/par"
)

// TestGumbelThreads: the Gumbel noise and the Gumbel KL, which split long
// slices over goroutines, give the same bits on one thread and on several.
func TestGumbelThreads(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	const n = 3*par.Grain + 5
	run := func() (noise, kl, grad []float64) {
		noise = FillGumbel(make([]float64, n), rand.New(rand.NewPCG(8, 1)))
		x := ad.Zeros(n)
		for i := range x.Data {
			x.Data[i] = noise[(i*7)%n]
			if i%11 == 0 {
				x.Data[i] = math.Inf(-1) // a forbidden entry
			}
		}
		p := ad.NewParam("x", x)
		tp := ad.NewTape()
		k := GumbelKLVar(tp.Param(p), 0.5, 1)
		require.NoError(t, tp.Backward(k))
		return noise, append([]float64(nil), k.Value()...), append([]float64(nil), p.Grad.Data...)
	}
	runtime.GOMAXPROCS(1)
	n1, k1, g1 := run()
	runtime.GOMAXPROCS(4)
	n4, k4, g4 := run()
	for name, pair := range map[string][2][]float64{"noise": {n1, n4}, "KL": {k1, k4}, "gradient": {g1, g4}} {
		for i := range pair[0] {
			if math.Float64bits(pair[0][i]) != math.Float64bits(pair[1][i]) {
				t.Fatalf("%s %d: %v on one thread, %v on four", name, i, pair[0][i], pair[1][i])
			}
		}
	}
}
