package main

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permlab/permlab/perm"
)

// allTuples lists the permutations of size n admitted by mask by filtering
// all n^n tuples, independently of visit's depth-first search.
func allTuples(n int, mask *perm.Mask) []perm.Perm {
	var out []perm.Perm
	total := 1
	for range n {
		total *= n
	}
	for code := range total {
		p := make(perm.Perm, n)
		c := code
		for i := n - 1; i >= 0; i-- {
			p[i] = c % n
			c /= n
		}
		if p.Validate() != nil || (mask != nil && !mask.Admits(p)) {
			continue
		}
		out = append(out, p)
	}
	return out
}

func randomMask(t *testing.T, n int, density float64, rng *rand.Rand) *perm.Mask {
	m, err := perm.NewMask(n)
	require.NoError(t, err)
	truth := perm.Random(n, rng)
	for i := range n {
		for j := range n {
			require.NoError(t, m.Set(i, j, j == truth[i] || rng.Float64() < density))
		}
	}
	return m
}

func TestEnumerateUniform(t *testing.T) {
	for n := 1; n <= 7; n++ {
		ex, err := Enumerate(n, nil, func(perm.Perm) float64 { return 0 })
		require.NoError(t, err)
		lg, _ := math.Lgamma(float64(n + 1))
		assert.Equal(t, int(math.Round(math.Exp(lg))), ex.Count)
		assert.InDelta(t, lg, ex.LogZ, 1e-12)
		for i := range n {
			for j := range n {
				assert.InDelta(t, 1/float64(n), ex.Marginals.At(i, j), 1e-12)
			}
		}
		assert.Equal(t, perm.Identity(n), ex.MAP, "ties go to the lexicographically first")
	}
}

func TestEnumerateAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	for _, tc := range []struct {
		n       int
		density float64 // mask density; 0 means no mask
	}{{3, 0}, {4, 0.5}, {5, 0}, {5, 0.4}, {6, 0.6}} {
		var mask *perm.Mask
		if tc.density > 0 {
			mask = randomMask(t, tc.n, tc.density, rng)
		}
		// An arbitrary table target, with one permutation of zero density.
		table := map[string]float64{}
		all := allTuples(tc.n, mask)
		for _, p := range all {
			table[keyOf(p)] = 3 * rng.NormFloat64()
		}
		if len(all) > 1 {
			table[keyOf(all[len(all)-1])] = math.Inf(-1)
		}
		logf := func(p perm.Perm) float64 { return table[keyOf(p)] }

		ex, err := Enumerate(tc.n, mask, logf)
		require.NoError(t, err)
		require.Equal(t, len(all), ex.Count)
		if mask != nil {
			assert.Equal(t, uint64(len(all)), countAdmitted(mask))
		}

		z := 0.0
		best := math.Inf(-1)
		var mapP perm.Perm
		marg := make([][]float64, tc.n)
		for i := range marg {
			marg[i] = make([]float64, tc.n)
		}
		for _, p := range all {
			w := math.Exp(logf(p))
			z += w
			for i, j := range p {
				marg[i][j] += w
			}
			if logf(p) > best {
				best, mapP = logf(p), p
			}
		}
		assert.InDelta(t, math.Log(z), ex.LogZ, 1e-12)
		assert.Equal(t, mapP, ex.MAP)
		assert.Equal(t, best, ex.MAPLogDensity)
		for i := range tc.n {
			rowSum, colSum := 0.0, 0.0
			for j := range tc.n {
				assert.InDelta(t, marg[i][j]/z, ex.Marginals.At(i, j), 1e-12)
				rowSum += ex.Marginals.At(i, j)
				colSum += ex.Marginals.At(j, i)
			}
			assert.InDelta(t, 1, rowSum, 1e-12)
			assert.InDelta(t, 1, colSum, 1e-12)
		}
	}
}

func TestEnumerateErrors(t *testing.T) {
	zero := func(perm.Perm) float64 { return 0 }
	m3, err := perm.NewMask(3) // admits nothing
	require.NoError(t, err)
	for name, f := range map[string]func() (*Exact, error){
		"n = 0":      func() (*Exact, error) { return Enumerate(0, nil, zero) },
		"n too big":  func() (*Exact, error) { return Enumerate(MaxEnumerate+1, nil, zero) },
		"nil logf":   func() (*Exact, error) { return Enumerate(3, nil, nil) },
		"mask size":  func() (*Exact, error) { return Enumerate(4, m3, zero) },
		"empty mask": func() (*Exact, error) { return Enumerate(3, m3, zero) },
		"NaN":        func() (*Exact, error) { return Enumerate(3, nil, func(perm.Perm) float64 { return math.NaN() }) },
		"+Inf":       func() (*Exact, error) { return Enumerate(3, nil, func(perm.Perm) float64 { return math.Inf(1) }) },
		"all -Inf":   func() (*Exact, error) { return Enumerate(3, nil, func(perm.Perm) float64 { return math.Inf(-1) }) },
	} {
		_, err := f()
		assert.Error(t, err, name)
	}
}

func keyOf(p perm.Perm) string {
	b := make([]byte, len(p))
	for i, c := range p {
		b[i] = byte('0' + c)
	}
	return string(b)
}
