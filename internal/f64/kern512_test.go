package f64

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The AVX-512 two-panel kernels must give the AVX2 kernels' bits: every
// entry is the same chain of fused multiply-adds, one lane of a wider
// register. Shapes cover odd panel counts, a narrow last panel, rows that
// are not a multiple of six, k = 0 and 1, and panel ranges that start or
// end between the two panels of a pair.
func TestGemmAVX512Bits(t *testing.T) {
	if !hasAVX512 {
		t.Skip("this CPU has no AVX-512F: nothing to compare")
	}
	defer func(saved bool) { useAVX512 = saved }(useAVX512)
	rng := rand.New(rand.NewPCG(13, 14))
	for _, s := range [][3]int{{6, 5, 16}, {7, 1, 17}, {12, 33, 24}, {13, 0, 32}, {100, 784, 512}, {5, 9, 40}, {25, 200, 256}, {61, 64, 100}} {
		m, k, n := s[0], s[1], s[2]
		a, bm, c0 := make([]float64, m*k), make([]float64, k*n), make([]float64, m*n)
		for _, v := range [][]float64{a, bm, c0} {
			for i := range v {
				v[i] = rng.NormFloat64()
			}
		}
		b := Pack(bm, k, n)
		np := (n + panelWidth - 1) / panelWidth
		for _, acc := range []bool{false, true} {
			for _, r := range [][2]int{{0, np}, {1, np}, {0, np - 1}, {1, np - 1}} {
				if r[0] > r[1] {
					continue
				}
				var got [2][]float64
				for j, wide := range []bool{false, true} {
					useAVX512 = wide
					got[j] = append([]float64(nil), c0...)
					GemmPanels(m, a, b, got[j], r[0], r[1], acc)
				}
				for i := range got[0] {
					if math.Float64bits(got[0][i]) != math.Float64bits(got[1][i]) {
						t.Fatalf("m=%d k=%d n=%d acc=%v panels %v: entry %d: AVX2 %v, AVX-512 %v", m, k, n, acc, r, i, got[0][i], got[1][i])
					}
				}
			}
		}
	}
}
