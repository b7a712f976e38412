package f64

import (
	"sync/atomic"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/floats"
)

// useAsm reports whether the assembly kernels run. Tests switch it off to
// check the fallback against the same expectations.
var useAsm = hasAsm

// UsesFMA reports whether the kernels run on the assembly path, where every
// multiply-add of Axpy, AxpyGather, Gemm and GemmAdd is fused (rounded
// once). Callers whose tests compare two orders of the same fused sums bit
// for bit check it first: the fallback path rounds differently.
func UsesFMA() bool { return useAsm }

// Axpy adds a·x to y[:len(x)]. It panics if y is shorter than x.
func Axpy(a float64, x, y []float64) {
	if a == 0 || len(x) == 0 {
		return
	}
	y = y[:len(x)]
	if useAsm {
		axpyAsm(a, x, y)
		return
	}
	floats.AddScaled(y, a, x)
}

// Dot returns the dot product of x and y[:len(x)]. It panics if y is
// shorter than x.
func Dot(x, y []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	y = y[:len(x)]
	if useAsm {
		return dotAsm(x, y)
	}
	return floats.Dot(x, y)
}

// panelWidth is the number of columns of B in one packed panel.
const panelWidth = 8

// Packed is a k×n matrix stored for repeated use as the right-hand factor
// of Gemm.
type Packed struct {
	k, n   int
	panels []float64 // ⌈n/8⌉ panels of k×8, row-major within a panel
	// raw is the row-major matrix, kept for the fallback path only: it is
	// filled when the matrix is packed while the assembly kernels are off.
	raw    []float64
	hasRaw bool
}

// Pack stores the k×n row-major matrix b (len(b) = k·n) for Gemm. The
// packed copy does not alias b.
func Pack(b []float64, k, n int) *Packed {
	return PackTo(nil, b, k, n)
}

// PackTo is Pack into p's storage, which is reused when it is large enough;
// a nil p allocates. It returns the packed matrix (p, when p is not nil).
func PackTo(p *Packed, b []float64, k, n int) *Packed {
	if k < 0 || n < 0 || len(b) != k*n {
		panic("f64: Pack: len(b) != k·n")
	}
	p = p.resize(k, n)
	np := (n + panelWidth - 1) / panelWidth
	for q := 0; q < np; q++ {
		dst := p.panels[q*k*panelWidth : (q+1)*k*panelWidth]
		c0 := q * panelWidth
		w := min(panelWidth, n-c0)
		for r := 0; r < k; r++ {
			d := dst[r*panelWidth : (r+1)*panelWidth]
			copy(d, b[r*n+c0:r*n+c0+w])
			clear(d[w:])
		}
	}
	if p.hasRaw = !useAsm; p.hasRaw {
		p.raw = grow(p.raw, k*n)
		copy(p.raw, b)
	}
	return p
}

// PackTransTo packs the k×n matrix B = btᵀ, given its transpose bt as an
// n×k row-major matrix (len(bt) = n·k), into p's storage as PackTo does.
// It saves the caller a transposed copy when the right factor of a product
// is a transpose, as in the adjoint dA = dC·Bᵀ: each row of bt becomes a
// column of a panel.
func PackTransTo(p *Packed, bt []float64, k, n int) *Packed {
	if k < 0 || n < 0 || len(bt) != k*n {
		panic("f64: PackTrans: len(bt) != k·n")
	}
	p = p.resize(k, n)
	np := (n + panelWidth - 1) / panelWidth
	for q := 0; q < np; q++ {
		dst := p.panels[q*k*panelWidth : (q+1)*k*panelWidth]
		c0 := q * panelWidth
		w := min(panelWidth, n-c0)
		if w < panelWidth {
			clear(dst)
		}
		for j := 0; j < w; j++ {
			for r, v := range bt[(c0+j)*k : (c0+j+1)*k] {
				dst[r*panelWidth+j] = v
			}
		}
	}
	if p.hasRaw = !useAsm; p.hasRaw {
		p.raw = grow(p.raw, k*n)
		Transpose(p.raw, bt, n, k)
	}
	return p
}

// rowMajor returns the packed matrix in row-major order: raw when it was
// kept, otherwise a copy read back from the panels (only when a matrix
// packed for the assembly path meets the fallback, which tests arrange).
func (p *Packed) rowMajor() []float64 {
	if p.hasRaw {
		return p.raw
	}
	k, n := p.k, p.n
	b := make([]float64, k*n)
	for q := 0; q < (n+panelWidth-1)/panelWidth; q++ {
		c0 := q * panelWidth
		w := min(panelWidth, n-c0)
		for r := 0; r < k; r++ {
			copy(b[r*n+c0:r*n+c0+w], p.panels[(q*k+r)*panelWidth:])
		}
	}
	return b
}

// Transpose writes the transpose of the m×n row-major src into the n×m
// row-major dst. It panics if the lengths are not m·n.
func Transpose(dst, src []float64, m, n int) {
	if m < 0 || n < 0 || len(src) != m*n || len(dst) != m*n {
		panic("f64: Transpose: lengths are not m·n")
	}
	const bs = 32
	for i0 := 0; i0 < m; i0 += bs {
		i1 := min(i0+bs, m)
		for j0 := 0; j0 < n; j0 += bs {
			j1 := min(j0+bs, n)
			for i := i0; i < i1; i++ {
				row := src[i*n : i*n+j1]
				for j := j0; j < j1; j++ {
					dst[j*m+i] = row[j]
				}
			}
		}
	}
}

// resize returns p (or a new Packed) with panel storage for a k×n matrix.
func (p *Packed) resize(k, n int) *Packed {
	if p == nil {
		p = new(Packed)
	}
	np := (n + panelWidth - 1) / panelWidth
	p.k, p.n = k, n
	p.panels = grow(p.panels, np*k*panelWidth)
	return p
}

func grow(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}

// Dims returns the shape k×n of the packed matrix.
func (p *Packed) Dims() (k, n int) { return p.k, p.n }

// Gemm sets c = a·B for the m×k row-major a and the m×n row-major c.
func Gemm(m int, a []float64, b *Packed, c []float64) {
	gemm(m, a, b, c, false)
}

// GemmAdd sets c += a·B for the m×k row-major a and the m×n row-major c.
// Each entry is one running sum that starts from the entry's old value and
// adds the k products in order with fused multiply-adds: into a zero c it
// gives Gemm's bits, and in general it differs from adding a separately
// rounded a·B by rounding only.
func GemmAdd(m int, a []float64, b *Packed, c []float64) {
	gemm(m, a, b, c, true)
}

func gemm(m int, a []float64, b *Packed, c []float64, acc bool) {
	k, n := b.k, b.n
	if len(a) != m*k || len(c) != m*n {
		panic("f64: Gemm: slice lengths do not match m×k·k×n")
	}
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		if !acc {
			clear(c)
		}
		return
	}
	if !useAsm {
		beta := 0.0
		if acc {
			beta = 1
		}
		blas64.Gemm(blas.NoTrans, blas.NoTrans, 1,
			blas64.General{Rows: m, Cols: k, Stride: k, Data: a},
			blas64.General{Rows: k, Cols: n, Stride: n, Data: b.rowMajor()},
			beta, blas64.General{Rows: m, Cols: n, Stride: n, Data: c})
		return
	}
	gemmAsm(m, k, n, a, b, c, acc)
}

// gemmAsm runs the 4×8 kernel over the full 4-row blocks of c. Panels are
// the outer loop so that one panel (k×8 doubles) stays in L1 cache while
// the rows of a stream past it. The last m%4 rows go through the same
// kernel, reading a through kern4x8off's tables (rows at i·k, taps
// 0 … k−1), so they are the same running sums. With acc the sums start
// from c's values instead of zero.
func gemmAsm(m, k, n int, a []float64, b *Packed, c []float64, acc bool) {
	const mr = 4
	var tile [mr * panelWidth]float64
	panels := b.panels
	full := m - m%mr
	np := (n + panelWidth - 1) / panelWidth
	for q := 0; q < np; q++ {
		panel := panels[q*k*panelWidth:]
		c0 := q * panelWidth
		w := min(panelWidth, n-c0)
		for i0 := 0; i0 < full; i0 += mr {
			if w == panelWidth {
				if acc {
					kern4x8acc(k, &a[i0*k], k, &panel[0], &c[i0*n+c0], n)
				} else {
					kern4x8(k, &a[i0*k], k, &panel[0], &c[i0*n+c0], n)
				}
				continue
			}
			if acc {
				for r := 0; r < mr; r++ {
					copy(tile[r*panelWidth:r*panelWidth+w], c[(i0+r)*n+c0:(i0+r)*n+c0+w])
				}
			}
			if acc {
				kern4x8acc(k, &a[i0*k], k, &panel[0], &tile[0], panelWidth)
			} else {
				kern4x8(k, &a[i0*k], k, &panel[0], &tile[0], panelWidth)
			}
			for r := 0; r < mr; r++ {
				copy(c[(i0+r)*n+c0:(i0+r)*n+c0+w], tile[r*panelWidth:r*panelWidth+w])
			}
		}
	}
	if full == m {
		return
	}
	// The last h < 4 rows: kern4x8off reads row i of a at i·k + p, with
	// the last row repeated into the unused tile rows; all indices are
	// below m·k = len(a).
	h := m - full
	var rr [mr]int
	for r := range rr {
		rr[r] = (full + min(r, h-1)) * k
	}
	offs := iota(k)
	for q := 0; q < np; q++ {
		panel := panels[q*k*panelWidth:]
		c0 := q * panelWidth
		w := min(panelWidth, n-c0)
		if acc {
			for r := 0; r < h; r++ {
				copy(tile[r*panelWidth:r*panelWidth+w], c[(full+r)*n+c0:(full+r)*n+c0+w])
			}
			kern4x8offacc(k, &a[0], &rr, &offs[0], &panel[0], &tile[0], panelWidth)
		} else {
			kern4x8off(k, &a[0], &rr, &offs[0], &panel[0], &tile[0], panelWidth)
		}
		for r := 0; r < h; r++ {
			copy(c[(full+r)*n+c0:(full+r)*n+c0+w], tile[r*panelWidth:r*panelWidth+w])
		}
	}
}

// iotaTab holds 0, 1, 2, …; it is replaced by a longer one when needed
// and never written after it is published.
var iotaTab atomic.Pointer[[]int]

// iota returns 0, 1, …, k−1. The slice is shared and must not be changed.
func iota(k int) []int {
	if t := iotaTab.Load(); t != nil && len(*t) >= k {
		return (*t)[:k]
	}
	t := make([]int, max(k, 256))
	for i := range t {
		t[i] = i
	}
	iotaTab.Store(&t)
	return t[:k]
}
