package perm

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"
)

func TestIdentity(t *testing.T) {
	for _, n := range []int{-3, 0, 1, 5} {
		p := Identity(n)
		if err := p.Validate(); err != nil {
			t.Fatalf("Identity(%d): %v", n, err)
		}
		if len(p) != max(n, 0) {
			t.Fatalf("Identity(%d) has length %d", n, len(p))
		}
		for i, v := range p {
			if v != i {
				t.Errorf("Identity(%d)[%d] = %d", n, i, v)
			}
		}
	}
}

func TestRandomValidAndReproducible(t *testing.T) {
	for _, n := range []int{0, 1, 2, 7, 100} {
		a := Random(n, rand.New(rand.NewPCG(3, 4)))
		b := Random(n, rand.New(rand.NewPCG(3, 4)))
		if err := a.Validate(); err != nil {
			t.Fatalf("Random(%d): %v", n, err)
		}
		if !a.Equal(b) {
			t.Errorf("Random(%d): same seed gave %v and %v", n, a, b)
		}
	}
	if err := Random(10, nil).Validate(); err != nil {
		t.Errorf("Random with nil rng: %v", err)
	}
}

func TestRandomUniform(t *testing.T) {
	// All 6 permutations of size 3 must be (close to) equally likely.
	// With N = 60000 draws each count is Binomial(N, 1/6): mean 10000,
	// sd ≈ 91. A 6 sd band (±550) is practically never crossed by a fair
	// shuffle with this fixed seed, yet a biased shuffle (e.g. swapping with
	// IntN(n) instead of IntN(i+1)) is off by more than 1000 on some cells.
	rng := rand.New(rand.NewPCG(1, 2))
	const draws = 60000
	counts := map[[3]int]int{}
	for range draws {
		p := Random(3, rng)
		counts[[3]int{p[0], p[1], p[2]}]++
	}
	if len(counts) != 6 {
		t.Fatalf("saw %d distinct permutations of 3, want 6", len(counts))
	}
	for k, c := range counts {
		if math.Abs(float64(c-draws/6)) > 550 {
			t.Errorf("permutation %v drawn %d times, want %d ± 550", k, c, draws/6)
		}
	}
}

func TestFromSliceAndValidate(t *testing.T) {
	tests := []struct {
		in []int
		ok bool
	}{
		{nil, true},
		{[]int{}, true},
		{[]int{0}, true},
		{[]int{2, 0, 1}, true},
		{[]int{1}, false},
		{[]int{-1, 0}, false},
		{[]int{0, 0}, false},
		{[]int{0, 2, 3}, false},
	}
	for _, tc := range tests {
		p, err := FromSlice(tc.in)
		if !tc.ok {
			if err == nil {
				t.Errorf("FromSlice(%v): no error", tc.in)
			}
			if Perm(tc.in).Validate() == nil {
				t.Errorf("Validate(%v): no error", tc.in)
			}
			continue
		}
		if err != nil {
			t.Fatalf("FromSlice(%v): %v", tc.in, err)
		}
		if p == nil || !slices.Equal([]int(p), tc.in) {
			t.Fatalf("FromSlice(%v) = %#v", tc.in, p)
		}
		if len(tc.in) > 0 {
			tc.in[0] = 99
			if p[0] == 99 {
				t.Errorf("FromSlice must copy its input")
			}
		}
	}
}

func TestEqualClone(t *testing.T) {
	p := Perm{1, 0, 2}
	q := p.Clone()
	if !p.Equal(q) {
		t.Errorf("clone differs")
	}
	q[0], q[1] = 0, 1
	if p.Equal(q) || p[0] != 1 {
		t.Errorf("clone shares storage or Equal is wrong")
	}
	if p.Equal(Perm{1, 0}) {
		t.Errorf("different lengths compare equal")
	}
	if !(Perm{}).Equal(nil) {
		t.Errorf("empty and nil should be equal")
	}
}

func mustMatrix(t *testing.T, p Perm) *mat.Dense {
	t.Helper()
	m, err := p.Matrix()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestInverse(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 1, 2, 9, 50} {
		p := Random(n, rng)
		q, err := p.Inverse()
		if err != nil {
			t.Fatal(err)
		}
		for i := range p {
			if q[p[i]] != i || p[q[i]] != i {
				t.Fatalf("n=%d: %v is not the inverse of %v", n, q, p)
			}
		}
		if n > 0 && !mat.Equal(mustMatrix(t, p).T(), mustMatrix(t, q)) {
			t.Errorf("n=%d: matrix of the inverse is not the transpose", n)
		}
	}
	if _, err := (Perm{0, 0}).Inverse(); err == nil {
		t.Errorf("Inverse of invalid perm: no error")
	}
}

func TestComposeMatchesMatrixProduct(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{1, 2, 5, 12} {
		p, q := Random(n, rng), Random(n, rng)
		r, err := p.Compose(q)
		if err != nil {
			t.Fatal(err)
		}
		for i := range r {
			if r[i] != q[p[i]] {
				t.Fatalf("Compose: r[%d] = %d, want q[p[i]] = %d", i, r[i], q[p[i]])
			}
		}
		var prod mat.Dense
		prod.Mul(mustMatrix(t, p), mustMatrix(t, q))
		if !mat.Equal(&prod, mustMatrix(t, r)) {
			t.Errorf("n=%d: matrix of p.Compose(q) is not P Q", n)
		}

		x := make([]float64, n)
		for i := range x {
			x[i] = rng.NormFloat64()
		}
		qx, _ := q.Apply(x)
		pqx, _ := p.Apply(qx)
		rx, err := r.Apply(x)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(pqx, rx) {
			t.Errorf("n=%d: r.Apply(x) != p.Apply(q.Apply(x))", n)
		}
	}
	bad := []struct{ p, q Perm }{
		{Perm{0, 1}, Perm{0}},
		{Perm{0, 0}, Perm{0, 1}},
		{Perm{0, 1}, Perm{1, 1}},
	}
	for _, b := range bad {
		if _, err := b.p.Compose(b.q); err == nil {
			t.Errorf("Compose(%v, %v): no error", b.p, b.q)
		}
	}
}

func TestApplyMatchesMatrixVector(t *testing.T) {
	p := Perm{2, 0, 1}
	x := []float64{10, 20, 30}
	y, err := p.Apply(x)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(y, []float64{30, 10, 20}) {
		t.Errorf("Apply = %v", y)
	}
	var v mat.VecDense
	v.MulVec(mustMatrix(t, p), mat.NewVecDense(3, x))
	if !slices.Equal(y, v.RawVector().Data) {
		t.Errorf("Apply = %v, P x = %v", y, v.RawVector().Data)
	}
	s, err := Permute(p, []string{"a", "b", "c"})
	if err != nil || !slices.Equal(s, []string{"c", "a", "b"}) {
		t.Errorf("Permute = %v, %v", s, err)
	}
	if _, err := p.Apply([]float64{1, 2}); err == nil {
		t.Errorf("Apply with short slice: no error")
	}
	if _, err := Permute(Perm{1, 1}, []int{1, 2}); err == nil {
		t.Errorf("Permute with invalid perm: no error")
	}
}

func TestApplyRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	p := Random(6, rng)
	a := mat.NewDense(6, 4, nil)
	for i := range 6 {
		for j := range 4 {
			a.Set(i, j, rng.NormFloat64())
		}
	}
	got, err := p.ApplyRows(a)
	if err != nil {
		t.Fatal(err)
	}
	var want mat.Dense
	want.Mul(mustMatrix(t, p), a)
	if !mat.Equal(got, &want) {
		t.Errorf("ApplyRows != P A")
	}
	for i := range p {
		if !slices.Equal(a.RawRowView(p[i]), got.RawRowView(i)) {
			t.Errorf("row %d of result is not row %d of input", i, p[i])
		}
	}
	inv, _ := p.Inverse()
	back, err := inv.ApplyRows(got)
	if err != nil || !mat.Equal(back, a) {
		t.Errorf("inverse did not restore the rows: %v", err)
	}
	if _, err := p.ApplyRows(mat.NewDense(5, 4, nil)); err == nil {
		t.Errorf("ApplyRows with wrong row count: no error")
	}
	e, err := Perm{}.ApplyRows(&mat.Dense{})
	if err != nil || !e.IsEmpty() {
		t.Errorf("empty ApplyRows = %v, %v", e, err)
	}
}

func TestMatrixRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, n := range []int{1, 3, 8} {
		p := Random(n, rng)
		m := mustMatrix(t, p)
		for i := range n {
			for j := range n {
				want := 0.0
				if j == p[i] {
					want = 1
				}
				if m.At(i, j) != want {
					t.Fatalf("P[%d][%d] = %v, want %v", i, j, m.At(i, j), want)
				}
			}
		}
		q, err := FromMatrix(m)
		if err != nil || !p.Equal(q) {
			t.Fatalf("FromMatrix(Matrix(%v)) = %v, %v", p, q, err)
		}
		// Float noise within ±MatrixTol/2 is accepted.
		for i := range n {
			for j := range n {
				m.Set(i, j, m.At(i, j)+(rng.Float64()-0.5)*MatrixTol)
			}
		}
		q, err = FromMatrix(m)
		if err != nil || !p.Equal(q) {
			t.Fatalf("FromMatrix with noise = %v, %v", q, err)
		}
	}
	if e, err := (Perm{}).Matrix(); err != nil || !e.IsEmpty() {
		t.Errorf("empty Matrix = %v, %v", e, err)
	}
	if _, err := (Perm{1, 1}).Matrix(); err == nil {
		t.Errorf("Matrix of invalid perm: no error")
	}
}

func TestFromMatrixErrors(t *testing.T) {
	tests := []struct {
		name string
		m    mat.Matrix
	}{
		{"non-square", mat.NewDense(2, 3, []float64{1, 0, 0, 0, 1, 0})},
		{"fractional", mat.NewDense(2, 2, []float64{0.5, 0.5, 0.5, 0.5})},
		{"beyond tolerance", mat.NewDense(2, 2, []float64{1 + 10*MatrixTol, 0, 0, 1})},
		{"row with two ones", mat.NewDense(2, 2, []float64{1, 1, 0, 0})},
		{"column with two ones", mat.NewDense(2, 2, []float64{1, 0, 1, 0})},
		{"empty row", mat.NewDense(2, 2, []float64{0, 0, 0, 1})},
		{"NaN", mat.NewDense(2, 2, []float64{math.NaN(), 0, 0, 1})},
		{"negative one", mat.NewDense(2, 2, []float64{-1, 0, 0, 1})},
	}
	for _, tc := range tests {
		if _, err := FromMatrix(tc.m); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

func TestMask(t *testing.T) {
	if _, err := NewMask(-1); err == nil {
		t.Errorf("NewMask(-1): no error")
	}
	m, err := NewMask(3)
	if err != nil {
		t.Fatal(err)
	}
	if m.Size() != 3 || m.Count() != 0 {
		t.Fatalf("NewMask(3): size %d count %d", m.Size(), m.Count())
	}
	for _, ij := range [][2]int{{0, 2}, {1, 0}, {2, 1}} {
		if err := m.Set(ij[0], ij[1], true); err != nil {
			t.Fatal(err)
		}
	}
	if m.Set(3, 0, true) == nil {
		t.Errorf("Set out of range: no error")
	}
	if !m.Allowed(0, 2) || m.Allowed(0, 0) || m.Allowed(-1, 0) {
		t.Errorf("Allowed wrong")
	}
	if !slices.Equal(m.Row(0), []int{2}) {
		t.Errorf("Row(0) = %v", m.Row(0))
	}
	if !m.Admits(Perm{2, 0, 1}) || m.Admits(Perm{0, 1, 2}) || m.Admits(Perm{2, 0}) {
		t.Errorf("Admits wrong")
	}
	c := m.Clone()
	_ = c.Set(0, 0, true)
	if m.Allowed(0, 0) {
		t.Errorf("Clone is not deep")
	}
	f, err := FullMask(4)
	if err != nil || f.Count() != 16 || !f.Admits(Random(4, rand.New(rand.NewPCG(1, 1)))) {
		t.Errorf("FullMask wrong: %v", err)
	}
}

// TestMaskBits checks the bitset against a plain set of pairs at sizes on
// and off word boundaries: every query, Row, CopyRow, Count and Clone after
// random sets and clears, and FullMask.
func TestMaskBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{0, 1, 2, 63, 64, 65, 127, 128, 130} {
		m, err := NewMask(n)
		if err != nil {
			t.Fatal(err)
		}
		want := map[[2]int]bool{}
		for range 4 * n * n {
			i, j, ok := rng.IntN(n), rng.IntN(n), rng.IntN(3) > 0
			if err := m.Set(i, j, ok); err != nil {
				t.Fatal(err)
			}
			want[[2]int{i, j}] = ok
		}
		c := m.Clone()
		if n > 0 {
			// The clone does not follow its source.
			if err := m.Set(0, 0, !want[[2]int{0, 0}]); err != nil {
				t.Fatal(err)
			}
		}
		count := 0
		var row []bool
		for i := range n {
			var cols []int
			for j := range n {
				w := want[[2]int{i, j}]
				if c.Allowed(i, j) != w {
					t.Fatalf("n=%d: Allowed(%d, %d) = %v, want %v", n, i, j, !w, w)
				}
				if w {
					cols = append(cols, j)
					count++
				}
			}
			if got := c.Row(i); !slices.Equal(got, cols) {
				t.Fatalf("n=%d: Row(%d) = %v, want %v", n, i, got, cols)
			}
			row = c.CopyRow(row, i)
			for j := range n {
				if row[j] != want[[2]int{i, j}] {
					t.Fatalf("n=%d: CopyRow(%d)[%d] = %v", n, i, j, row[j])
				}
			}
		}
		if got := c.Count(); got != count {
			t.Fatalf("n=%d: Count = %d, want %d", n, got, count)
		}
		if c.Allowed(-1, 0) || c.Allowed(0, n) {
			t.Fatalf("n=%d: an index out of range is allowed", n)
		}
		f, err := FullMask(n)
		if err != nil {
			t.Fatal(err)
		}
		if f.Count() != n*n || f.Allowed(0, n) {
			t.Fatalf("n=%d: FullMask counts %d pairs, allows (0, n): %v", n, f.Count(), f.Allowed(0, n))
		}
	}
}
