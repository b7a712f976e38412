package ad

import (
	"math"
	"runtime"
	"testing"
)

// sameBits reports whether a and b are the same float64, NaNs with NaNs.
func sameBits(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || (math.IsNaN(a) && math.IsNaN(b))
}

var negZero = math.Copysign(0, -1)

// inject records the identity on x whose adjoint rule ignores the
// incoming adjoint and assigns adj to x's: a way to hand an op an adjoint
// that holds −0 and NaN, which sums from zeroed buffers never produce.
func inject(x *Var, adj []float64) *Var {
	t := x.Tape()
	val := t.Alloc(x.Size())
	copy(val, x.Value())
	return t.Custom(x.Shape(), val, []*Var{x}, func(_ []float64, gIn [][]float64) {
		if gIn[0] != nil {
			copy(gIn[0], adj)
		}
	})
}

// TestDenseAdjointBits pins the adjoints of ReLU, of a bias Add and Sub
// (tiled and full operands) and of their sums with other adjoints to the
// values of zeroed buffers updated with += and −=, on inputs that hit the
// corner cases: signed zeros, NaN and infinities in the values and in the
// incoming adjoints. The ops write fresh adjoints without zeroing them and
// choose ReLU's terms by masks, which must not change a bit.
func TestDenseAdjointBits(t *testing.T) {
	inf := math.Inf(1)
	xs := []float64{negZero, 0, 1, -1, math.NaN(), inf, -inf, 2.5, 5e-324, -5e-324, 3, -0.5}
	cs := []float64{1, negZero, -2, 0.5, 3, negZero, 0, inf, -1, math.NaN(), negZero, 1e-300}
	ds := []float64{0.25, 2, negZero, -3, 1, 0, negZero, 4, 1, -2, 0.5, -inf}
	bs := []float64{negZero, 1, -2, math.NaN()}
	const rows, cols = 3, 4

	// ReLU alone (a fresh adjoint), then ReLU after another use of x (an
	// adjoint that already holds a sum).
	for _, twice := range []bool{false, true} {
		tp := NewTape()
		x := tp.Variable(&Tensor{Shape: []int{rows, cols}, Data: xs})
		c := tp.Const(&Tensor{Shape: []int{rows, cols}, Data: cs})
		r := ReLU(x)
		for i, xv := range xs {
			if want := max(xv, 0); !sameBits(r.Value()[i], want) {
				t.Fatalf("ReLU(%v) = %v, want %v", xv, r.Value()[i], want)
			}
		}
		loss := Sum(Mul(inject(r, cs), c))
		if twice {
			// Recorded last, so its adjoint reaches x first.
			loss = Add(loss, Sum(Mul(x, tp.Const(&Tensor{Shape: []int{rows, cols}, Data: ds}))))
		}
		if err := tp.Backward(loss); err != nil {
			t.Fatal(err)
		}
		for i, xv := range xs {
			gy := cs[i] // the injected adjoint
			want := 0.0
			if twice {
				want = 0 + 1*ds[i]
			}
			if xv > 0 {
				want += gy
			}
			if got := x.Grad()[i]; !sameBits(got, want) {
				t.Errorf("ReLU twice=%v: x̄[%d] = %v (bits %x), want %v (bits %x)", twice, i, got, math.Float64bits(got), want, math.Float64bits(want))
			}
		}
	}

	// A bias added to (subtracted from) every row; the full operand's
	// adjoint fresh, or already holding a sum.
	for _, sub := range []bool{false, true} {
		for _, twice := range []bool{false, true} {
			tp := NewTape()
			m := tp.Variable(&Tensor{Shape: []int{rows, cols}, Data: xs})
			b := tp.Variable(&Tensor{Shape: []int{cols}, Data: bs})
			c := tp.Const(&Tensor{Shape: []int{rows, cols}, Data: cs})
			var z *Var
			if sub {
				z = Sub(m, b)
			} else {
				z = Add(m, b)
			}
			for i := range xs {
				var want float64
				if sub {
					want = xs[i] - bs[i%cols]
				} else {
					want = xs[i] + bs[i%cols]
				}
				if got := z.Value()[i]; !sameBits(got, want) {
					t.Fatalf("sub=%v: z[%d] = %v, want %v", sub, i, got, want)
				}
			}
			loss := Sum(Mul(inject(z, cs), c))
			if twice {
				loss = Add(loss, Sum(Mul(m, tp.Const(&Tensor{Shape: []int{rows, cols}, Data: ds}))))
			}
			if err := tp.Backward(loss); err != nil {
				t.Fatal(err)
			}
			gb := make([]float64, cols)
			for i := range xs {
				gz := cs[i]
				want := 0.0
				if twice {
					want = 0 + 1*ds[i]
				}
				want += gz
				if got := m.Grad()[i]; !sameBits(got, want) {
					t.Errorf("sub=%v twice=%v: m̄[%d] = %v (bits %x), want %v (bits %x)", sub, twice, i, got, math.Float64bits(got), want, math.Float64bits(want))
				}
				if sub {
					gb[i%cols] -= gz
				} else {
					gb[i%cols] += gz
				}
			}
			for j, want := range gb {
				if got := b.Grad()[j]; !sameBits(got, want) {
					t.Errorf("sub=%v: b̄[%d] = %v, want %v", sub, j, got, want)
				}
			}
		}
	}

	// b − m: the full operand is subtracted, its fresh adjoint is 0 − v.
	tp := NewTape()
	m := tp.Variable(&Tensor{Shape: []int{rows, cols}, Data: xs})
	c := tp.Const(&Tensor{Shape: []int{rows, cols}, Data: cs})
	if err := tp.Backward(Sum(Mul(inject(Sub(tp.Const(&Tensor{Shape: []int{cols}, Data: bs}), m), cs), c))); err != nil {
		t.Fatal(err)
	}
	for i := range xs {
		want := 0 - cs[i]
		if got := m.Grad()[i]; !sameBits(got, want) {
			t.Errorf("b − m: m̄[%d] = %v (bits %x), want %v (bits %x)", i, got, math.Float64bits(got), want, math.Float64bits(want))
		}
	}
}

// TestParamGradAddBits checks that Backward adds a parameter's adjoint
// into Param.Grad with the bits of a plain +, over signed zeros,
// infinities and NaN on both sides, every tail length of the vector loop
// and a gradient large enough to be split over goroutines (at
// GOMAXPROCS 1 and 3).
func TestParamGradAddBits(t *testing.T) {
	inf := math.Inf(1)
	vals := []float64{negZero, 0, 1, -1, inf, -inf, math.NaN(), 1e308, -1e308, 5e-324, 0.1, -0.3}
	sizes := []int{1 << 16, 1<<16 + 37}
	for n := 1; n <= 23; n++ {
		sizes = append(sizes, n)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 3} {
		runtime.GOMAXPROCS(procs)
		for _, n := range sizes {
			paramGradAdd(t, vals, n)
		}
	}
}

func paramGradAdd(t *testing.T, vals []float64, n int) {
	t.Helper()
	old := make([]float64, n)
	adj := make([]float64, n)
	for i := range old {
		old[i] = vals[(i*5+n)%len(vals)]
		adj[i] = vals[(i*7+3)%len(vals)]
	}
	p := NewParam("p", Zeros(n))
	copy(p.Grad.Data, old)
	tp := NewTape()
	if err := tp.Backward(Sum(inject(tp.Param(p), adj))); err != nil {
		t.Fatal(err)
	}
	for i := range old {
		want := old[i] + adj[i]
		if got := p.Grad.Data[i]; !sameBits(got, want) {
			t.Fatalf("n=%d: Grad[%d] = %v (bits %x), want %v (bits %x)", n, i, got, math.Float64bits(got), want, math.Float64bits(want))
		}
	}
}
