package ad

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/permlab/permlab/internal/f64"
	"github.com/permlab/permlab/internal/longtest"
	"github.com/stretchr/testify/require"
)

// matmulShapes covers the four operand forms with sizes that exercise the
// packed kernel's edges: rows not a multiple of 4, columns not a multiple
// of 8, and products large enough to be split over goroutines.
var matmulShapes = []struct {
	name string
	a, b []int
}{
	{"2x2/odd", []int{7, 5}, []int{5, 11}},
	{"2x2/large", []int{75, 53}, []int{53, 37}},
	{"3x3", []int{5, 33, 29}, []int{5, 29, 17}},
	{"3x2", []int{6, 41, 30}, []int{30, 19}},
	{"2x3", []int{23, 30}, []int{6, 30, 41}},
	// Few rows: gemmNN adds rows of b in place (direct) instead of packing.
	{"2x2/row", []int{1, 45}, []int{45, 37}},
	{"3x3/wide", []int{4, 9, 9}, []int{4, 9, 81}},
	// A transpose read in place (gemmTN from gatherTN entries on).
	{"3x2/tall", []int{3, 700, 8}, []int{8, 5}},
}

// naiveMatMul returns a·b by the definition, looping over batch elements
// for rank-3 operands.
func naiveMatMul(a, b *Tensor) []float64 {
	ra, rb := len(a.Shape), len(b.Shape)
	m, k, n := a.Shape[ra-2], a.Shape[ra-1], b.Shape[rb-1]
	batch := 1
	if ra == 3 {
		batch = a.Shape[0]
	}
	if rb == 3 {
		batch = b.Shape[0]
	}
	out := make([]float64, batch*m*n)
	for p := range batch {
		ao, bo := 0, 0
		if ra == 3 {
			ao = p * m * k
		}
		if rb == 3 {
			bo = p * k * n
		}
		for i := range m {
			for j := range n {
				s := 0.0
				for q := range k {
					s += a.Data[ao+i*k+q] * b.Data[bo+q*n+j]
				}
				out[p*m*n+i*n+j] = s
			}
		}
	}
	return out
}

func TestMatMulMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 1))
	for _, c := range matmulShapes {
		t.Run(c.name, func(t *testing.T) {
			a := randTensor(rng, -1, 1, c.a...)
			b := randTensor(rng, -1, 1, c.b...)
			tp := NewTape()
			got := MatMul(tp.Const(a), tp.Const(b)).Value()
			want := naiveMatMul(a, b)
			require.NoError(t, tp.Err())
			require.Len(t, got, len(want))
			// Sums of at most 53 products of numbers in [-1, 1] in two
			// orders (one with fused multiply-adds) agree to ~k ulps of
			// the sum's magnitude (< 53); 1e-12 leaves a wide margin.
			for i := range want {
				require.InDelta(t, want[i], got[i], 1e-12, "element %d", i)
			}
		})
	}
}

func TestMatMulGradientsLarge(t *testing.T) {
	longtest.Skip(t, "finite differences over thousands of inputs")
	rng := rand.New(rand.NewPCG(4, 2))
	for _, c := range matmulShapes {
		t.Run(c.name, func(t *testing.T) {
			a := randTensor(rng, -1, 1, c.a...)
			b := randTensor(rng, -1, 1, c.b...)
			require.NoError(t, CheckGradient(func(_ *Tape, xs []*Var) *Var { return MatMul(xs[0], xs[1]) }, a, b))
		})
	}
}

// matmulBits returns the bits of a·b and of both adjoints for the loss
// Σ w ⊙ (a·b) with fixed weights w, the product taken by op (MatMul or
// MatMul32).
func matmulBits(op func(a, b *Var) *Var, a, b, w *Tensor) []uint64 {
	tp := NewTape()
	va, vb := tp.Variable(a), tp.Variable(b)
	y := op(va, vb)
	if err := tp.Backward(Sum(Mul(y, tp.Const(w)))); err != nil {
		panic(err)
	}
	var bits []uint64
	for _, s := range [][]float64{y.Value(), va.Grad(), vb.Grad()} {
		for _, v := range s {
			bits = append(bits, math.Float64bits(v))
		}
	}
	return bits
}

func TestMatMulIndependentOfGOMAXPROCS(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 3))
	shapes := append(matmulShapes, struct {
		name string
		a, b []int
	}{"2x2/279", []int{279, 279}, []int{279, 279}},
		// A batch against a weight: one block of rows, blocks of panels
		// packed and multiplied on the goroutine that takes them.
		struct {
			name string
			a, b []int
		}{"2x2/100x200x96", []int{100, 200}, []int{200, 96}},
		// Many rows and two panels: the panels packed first, then blocks
		// of rows × panels.
		struct {
			name string
			a, b []int
		}{"2x2/400x300x16", []int{400, 300}, []int{300, 16}})
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, c := range shapes {
		a := randTensor(rng, -1, 1, c.a...)
		b := randTensor(rng, -1, 1, c.b...)
		w := randTensor(rng, -1, 1, naiveShape(c.a, c.b)...)
		for _, op := range []struct {
			name string
			f    func(a, b *Var) *Var
		}{{"MatMul", MatMul}, {"MatMul32", MatMul32}} {
			var ref []uint64
			for _, procs := range []int{1, 4, 3} {
				runtime.GOMAXPROCS(procs)
				got := matmulBits(op.f, a, b, w)
				if ref == nil {
					ref = got
					continue
				}
				require.Equal(t, ref, got, fmt.Sprintf("%s %s: GOMAXPROCS=%d differs from GOMAXPROCS=1", op.name, c.name, procs))
			}
		}
	}
}

func naiveShape(a, b []int) []int {
	m, n := a[len(a)-2], b[len(b)-1]
	switch {
	case len(a) == 3:
		return []int{a[0], m, n}
	case len(b) == 3:
		return []int{b[0], m, n}
	}
	return []int{m, n}
}

// TestGemmNNDirectMatchesPacked checks that the unpacked path of gemmNN
// for few-row products gives the packed kernel's bits, accumulating or
// not.
func TestGemmNNDirectMatchesPacked(t *testing.T) {
	if !f64.UsesFMA() {
		t.Skip("the fallback kernels round differently")
	}
	rng := rand.New(rand.NewPCG(4, 9))
	for _, s := range []struct{ m, k, n int }{{1, 100, 100}, {2, 7, 9}, {9, 9, 81}, {15, 33, 40}, {3, 0, 40}} {
		require.True(t, direct(s.m, s.n, s.k), "%+v", s)
		a := randTensor(rng, -1, 1, s.m*s.k).Data
		b := randTensor(rng, -1, 1, s.k*s.n).Data
		for _, acc := range []bool{false, true} {
			c0 := randTensor(rng, -1, 1, s.m*s.n).Data
			got := append([]float64(nil), c0...)
			want := append([]float64(nil), c0...)
			gemmNN(s.m, s.n, s.k, a, b, got, acc, false)
			p := f64.Pack(b, s.k, s.n)
			if acc {
				f64.GemmAdd(s.m, a, p, want)
			} else {
				f64.Gemm(s.m, a, p, want)
			}
			for i := range want {
				require.Equal(t, math.Float64bits(want[i]), math.Float64bits(got[i]), "%+v acc=%v entry %d", s, acc, i)
			}
		}
	}
}
