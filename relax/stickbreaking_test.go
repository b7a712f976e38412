package relax

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/ad"
)

// sbRandPsi returns an n×n matrix with N(0, scale²) entries.
func sbRandPsi(rng *rand.Rand, n int, scale float64) *mat.Dense {
	m := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			m.Set(i, j, scale*rng.NormFloat64())
		}
	}
	return m
}

// sbRequireDoublyStochastic checks entries in [0, 1] and unit row and
// column sums to within tol.
func sbRequireDoublyStochastic(t *testing.T, x mat.Matrix, tol float64) {
	t.Helper()
	N, _ := x.Dims()
	for i := 0; i < N; i++ {
		var rs, cs float64
		for j := 0; j < N; j++ {
			v := x.At(i, j)
			require.Truef(t, v >= 0 && v <= 1, "entry (%d, %d) = %v outside [0, 1]", i, j, v)
			rs += v
			cs += x.At(j, i)
		}
		require.InDeltaf(t, 1, rs, tol, "row %d", i)
		require.InDeltaf(t, 1, cs, tol, "column %d", i)
	}
}

func TestStickBreakingDoublyStochastic(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	type tc struct {
		name string
		psi  *mat.Dense
	}
	var cases []tc
	for _, N := range []int{2, 3, 4, 5, 8, 20} {
		n := N - 1
		for _, scale := range []float64{0.1, 1, 5, 30} {
			for k := 0; k < 5; k++ {
				cases = append(cases, tc{fmt.Sprintf("N=%d/scale=%g/%d", N, scale, k), sbRandPsi(rng, n, scale)})
			}
		}
		// Saturated logits: every entry ±30, all +30 and all −30.
		for k := 0; k < 5; k++ {
			m := mat.NewDense(n, n, nil)
			for i := range n * n {
				m.RawMatrix().Data[i] = 30 * float64(2*rng.IntN(2)-1)
			}
			cases = append(cases, tc{fmt.Sprintf("N=%d/signs%d", N, k), m})
		}
		for _, v := range []float64{30, -30} {
			m := mat.NewDense(n, n, nil)
			for i := range n * n {
				m.RawMatrix().Data[i] = v
			}
			cases = append(cases, tc{fmt.Sprintf("N=%d/all%g", N, v), m})
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x, ld, err := StickBreaking(c.psi)
			require.NoError(t, err)
			r, cc := x.Dims()
			n, _ := c.psi.Dims()
			require.Equal(t, n+1, r)
			require.Equal(t, n+1, cc)
			// Sums are built from at most N terms in [0, 1]: a few ulps each.
			sbRequireDoublyStochastic(t, x, 1e-13)
			require.False(t, math.IsNaN(ld) || math.IsInf(ld, 1), "log det %v", ld)
		})
	}
}

// With ψ = 0 the first row is uniform (the shift log(N−j−1)).
func TestStickBreakingZeroFirstRowUniform(t *testing.T) {
	for N := 2; N <= 7; N++ {
		x, _, err := StickBreaking(mat.NewDense(N-1, N-1, nil))
		require.NoError(t, err)
		for j := 0; j < N; j++ {
			assert.InDelta(t, 1/float64(N), x.At(0, j), 1e-15, "N=%d j=%d", N, j)
		}
	}
}

// Hand-computed values for N = 2 and N = 3.
func TestStickBreakingKnownValues(t *testing.T) {
	sig := func(z float64) float64 { return 1 / (1 + math.Exp(-z)) }
	// N = 2: x00 = σ(ψ), log det = log σ'(ψ).
	x, ld, err := StickBreaking(mat.NewDense(1, 1, []float64{0.7}))
	require.NoError(t, err)
	b := sig(0.7)
	assert.InDeltaSlice(t, []float64{b, 1 - b, 1 - b, b}, x.RawMatrix().Data, 1e-15)
	assert.InDelta(t, math.Log(b*(1-b)), ld, 1e-14)

	// N = 3 with ψ = [[a, b], [c, d]].
	a, bb, c, d := 0.3, -1.2, 2.0, 0.5
	x, ld, err = StickBreaking(mat.NewDense(2, 2, []float64{a, bb, c, d}))
	require.NoError(t, err)
	b00 := sig(a - math.Log(2))
	x00 := b00
	b01 := sig(bb)
	x01 := b01 * (1 - x00) // l = 0 (column 2 can absorb anything), u = r
	x02 := 1 - x00 - x01
	// Row 1, entry (1,0): r = 1, capacities c = 1 − x0k.
	c0, c1, c2 := 1-x00, 1-x01, 1-x02
	u10, l10 := math.Min(1, c0), math.Max(0, 1-c1-c2)
	b10 := sig(c - math.Log(2))
	x10 := l10 + b10*(u10-l10)
	r := 1 - x10
	u11, l11 := math.Min(r, c1), math.Max(0, r-c2)
	b11 := sig(d)
	x11 := l11 + b11*(u11-l11)
	want := []float64{
		x00, x01, x02,
		x10, x11, 1 - x10 - x11,
		1 - x00 - x10, 1 - x01 - x11, 1 - x02 - (1 - x10 - x11),
	}
	assert.InDeltaSlice(t, want, x.RawMatrix().Data, 1e-14)
	wantLD := math.Log(b00*(1-b00)) + math.Log(b01*(1-b01)) + math.Log(1-x00) +
		math.Log(b10*(1-b10)) + math.Log(u10-l10) + math.Log(b11*(1-b11)) + math.Log(u11-l11)
	assert.InDelta(t, wantLD, ld, 1e-13)
}

func TestStickBreakingInverse(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 1))
	var worst float64
	for _, N := range []int{2, 3, 4, 5, 10, 30} {
		for _, scale := range []float64{0.5, 1, 2, 5} {
			for k := 0; k < 5; k++ {
				psi := sbRandPsi(rng, N-1, scale)
				x, ld, err := StickBreaking(psi)
				require.NoError(t, err)
				back, ld2, err := StickBreakingInverse(x)
				require.NoError(t, err)
				// In x space the round trip is well conditioned: a few
				// ulps per entry.
				x2, _, err := StickBreaking(back)
				require.NoError(t, err)
				for i, v := range x.RawMatrix().Data {
					require.InDeltaf(t, v, x2.RawMatrix().Data[i], 1e-14, "N=%d scale=%g element %d", N, scale, i)
				}
				// ψ_ij = log(x−l) − log(u−x) amplifies the absolute
				// error of x, l and u (sums of at most N entries: about
				// Nε) by 1/(x−l) + 1/(u−x) = 1/(β(1−β)(u−l)), which
				// grows without bound with |ψ|; allow 4Nε times that.
				n := N - 1
				m := n * n
				tr := stickBreakingTrace{make([]float64, m), make([]float64, m), make([]float64, m), make([]float64, m)}
				stickBreakingForward(psi.RawMatrix().Data, n, make([]float64, N*N), make([]float64, 3*N), tr)
				// log(u−l) carries an error of about Nε/(u−l).
				var ldTol float64
				for i, v := range psi.RawMatrix().Data {
					ldTol += 4 * float64(N) * 0x1p-52 / tr.gap[i]
					tol := 1e-13 + 4*float64(N)*0x1p-52/(tr.beta[i]*tr.beta1[i]*tr.gap[i])
					ldTol += tol // log σ'(z) has slope |1 − 2β| <= 1 in z
					got := back.RawMatrix().Data[i]
					worst = max(worst, math.Abs(v-got)/tol)
					require.InDeltaf(t, v, got, tol, "N=%d scale=%g element %d", N, scale, i)
				}
				require.InDelta(t, ld, ld2, 1e-12+ldTol)
			}
		}
	}
	t.Logf("largest |ψ − SB⁻¹(SB(ψ))| / tolerance: %.2g", worst)
}

// sbFreeMap returns the free entries (row-major, i, j < N−1) of
// StickBreaking(psi) for psi given row-major.
func sbFreeMap(t *testing.T, psi []float64, n int) []float64 {
	x, _, err := StickBreaking(mat.NewDense(n, n, append([]float64(nil), psi...)))
	require.NoError(t, err)
	out := make([]float64, 0, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			out = append(out, x.At(i, j))
		}
	}
	return out
}

// The log-Jacobian equals log |det| of a central-difference Jacobian of
// the free entries.
func TestStickBreakingLogDetNumerical(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 1))
	for N := 2; N <= 5; N++ {
		n := N - 1
		for k := 0; k < 6; k++ {
			psi := sbRandPsi(rng, n, 1.5).RawMatrix().Data
			_, ld, err := StickBreaking(mat.NewDense(n, n, append([]float64(nil), psi...)))
			require.NoError(t, err)
			const h = 1e-5
			jac := mat.NewDense(n*n, n*n, nil)
			for c := 0; c < n*n; c++ {
				p := append([]float64(nil), psi...)
				p[c] += h
				fp := sbFreeMap(t, p, n)
				p[c] -= 2 * h
				fm := sbFreeMap(t, p, n)
				for r := range fp {
					jac.Set(r, c, (fp[r]-fm[r])/(2*h))
				}
			}
			var lu mat.LU
			lu.Factorize(jac)
			num, _ := lu.LogDet()
			// Central differences are accurate to O(h²) ≈ 1e-10 per
			// entry here (entries of order 0.1 to 1); the determinant
			// of a ≤16×16 matrix keeps that to about 1e-7 relative.
			assert.InDeltaf(t, num, ld, 1e-6, "N=%d case %d", N, k)
		}
	}
}

func TestStickBreakingVarMatches(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 1))
	tape := ad.NewTape()
	for _, N := range []int{2, 3, 6} {
		n := N - 1
		psis := []*mat.Dense{sbRandPsi(rng, n, 2), sbRandPsi(rng, n, 2), sbRandPsi(rng, n, 2)}
		// Single matrix.
		tape.Reset()
		v := tape.Variable(&ad.Tensor{Shape: []int{n, n}, Data: psis[0].RawMatrix().Data})
		x, ld := StickBreakingVar(v)
		require.NoError(t, tape.Err())
		want, wantLD, err := StickBreaking(psis[0])
		require.NoError(t, err)
		require.Equal(t, []int{N, N}, x.Shape())
		require.Empty(t, ld.Shape())
		require.Equal(t, want.RawMatrix().Data, x.Value())
		require.Equal(t, wantLD, ld.Item())
		// Batch.
		tape.Reset()
		var data []float64
		for _, p := range psis {
			data = append(data, p.RawMatrix().Data...)
		}
		v = tape.Variable(&ad.Tensor{Shape: []int{3, n, n}, Data: data})
		x, ld = StickBreakingVar(v)
		require.NoError(t, tape.Err())
		require.Equal(t, []int{3, N, N}, x.Shape())
		require.Equal(t, []int{3}, ld.Shape())
		for b, p := range psis {
			want, wantLD, err := StickBreaking(p)
			require.NoError(t, err)
			require.Equal(t, want.RawMatrix().Data, x.Value()[b*N*N:(b+1)*N*N])
			require.Equal(t, wantLD, ld.Value()[b])
		}
	}
}

func TestStickBreakingVarGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 1))
	for _, N := range []int{2, 3, 4, 5, 7} {
		n := N - 1
		for _, scale := range []float64{0.5, 2} {
			psi := &ad.Tensor{Shape: []int{n, n}, Data: sbRandPsi(rng, n, scale).RawMatrix().Data}
			name := fmt.Sprintf("N=%d/scale=%g", N, scale)
			// x alone (GradCheck weights every output element), log det
			// alone, and both together so that the two adjoint sweeps add.
			require.NoError(t, ad.CheckGradient(func(tp *ad.Tape, xs []*ad.Var) *ad.Var {
				x, _ := StickBreakingVar(xs[0])
				return x
			}, psi), name)
			require.NoError(t, ad.CheckGradient(func(tp *ad.Tape, xs []*ad.Var) *ad.Var {
				_, ld := StickBreakingVar(xs[0])
				return ld
			}, psi), name)
			require.NoError(t, ad.CheckGradient(func(tp *ad.Tape, xs []*ad.Var) *ad.Var {
				x, ld := StickBreakingVar(xs[0])
				return ad.Add(ad.Sum(ad.Square(x)), ld)
			}, psi), name)
		}
	}
	// Batch of 3 with psi built from another op.
	n := 3
	data := sbRandPsi(rng, 3*n, 1).RawMatrix().Data[:3*n*n]
	psi := &ad.Tensor{Shape: []int{3, n, n}, Data: data}
	require.NoError(t, ad.CheckGradient(func(tp *ad.Tape, xs []*ad.Var) *ad.Var {
		x, ld := StickBreakingVar(ad.Scale(xs[0], 1.5))
		return ad.Add(ad.Sum(ad.Mul(x, x)), ad.Sum(ad.Scale(ld, 0.3)))
	}, psi))
}

func TestStickBreakingErrors(t *testing.T) {
	nan := mat.NewDense(2, 2, []float64{0, math.NaN(), 0, 0})
	inf := mat.NewDense(2, 2, []float64{0, 0, math.Inf(1), 0})
	for _, c := range []struct {
		name string
		psi  mat.Matrix
	}{
		{"nil", nil},
		{"non-square", mat.NewDense(2, 3, nil)},
		{"empty", &mat.Dense{}},
		{"NaN", nan},
		{"Inf", inf},
	} {
		_, _, err := StickBreaking(c.psi)
		assert.Error(t, err, c.name)
	}

	permMat := mat.NewDense(3, 3, []float64{0, 1, 0, 1, 0, 0, 0, 0, 1})
	half := mat.NewDense(2, 2, []float64{0.5, 0.5, 0.5, 0.5})
	for _, c := range []struct {
		name    string
		x       mat.Matrix
		outside bool
	}{
		{"nil", nil, false},
		{"non-square", mat.NewDense(2, 3, nil), false},
		{"1x1", mat.NewDense(1, 1, []float64{1}), false},
		{"NaN", mat.NewDense(2, 2, []float64{math.NaN(), 0.5, 0.5, 0.5}), false},
		{"row sums", mat.NewDense(2, 2, []float64{0.6, 0.5, 0.4, 0.5}), true},
		{"column sums", mat.NewDense(2, 2, []float64{0.5, 0.5, 0.6, 0.4}), true},
		{"negative", mat.NewDense(2, 2, []float64{-0.5, 1.5, 1.5, -0.5}), true},
		{"vertex", permMat, true},
		{"ok", half, false},
	} {
		_, _, err := StickBreakingInverse(c.x)
		if c.name == "ok" {
			assert.NoError(t, err)
			continue
		}
		require.Error(t, err, c.name)
		assert.Equal(t, c.outside, errors.Is(err, ErrOutsideImage), "%s: %v", c.name, err)
	}

	tape := ad.NewTape()
	for _, c := range []struct {
		name string
		v    *ad.Tensor
	}{
		{"rank 1", &ad.Tensor{Shape: []int{4}, Data: make([]float64, 4)}},
		{"non-square", &ad.Tensor{Shape: []int{2, 3}, Data: make([]float64, 6)}},
		{"empty", &ad.Tensor{Shape: []int{0, 0}, Data: nil}},
		{"rank 4", &ad.Tensor{Shape: []int{1, 1, 2, 2}, Data: make([]float64, 4)}},
		{"NaN", &ad.Tensor{Shape: []int{1, 1}, Data: []float64{math.NaN()}}},
	} {
		tape.Reset()
		x, ld := StickBreakingVar(tape.Variable(c.v))
		require.Error(t, tape.Err(), c.name)
		require.NotNil(t, x)
		require.NotNil(t, ld)
		// Later ops stay no-ops and Backward reports the error.
		require.Error(t, tape.Backward(ad.Sum(ad.Add(ad.Sum(x), ld))), c.name)
	}
	x, ld := StickBreakingVar(nil)
	assert.Nil(t, x)
	assert.Nil(t, ld)
}

func BenchmarkStickBreakingVar(b *testing.B) {
	for _, N := range []int{10, 100, 280} {
		b.Run(fmt.Sprintf("N=%d", N), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(6, 1))
			n := N - 1
			psi := ad.NewParam("psi", &ad.Tensor{Shape: []int{n, n}, Data: sbRandPsi(rng, n, 1).RawMatrix().Data})
			tape := ad.NewTape()
			b.ReportAllocs()
			for b.Loop() {
				tape.Reset()
				x, ld := StickBreakingVar(tape.Param(psi))
				if err := tape.Backward(ad.Add(ad.Sum(x), ld)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
