package f64

import (
	"sync/atomic"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/floats"
)

// useAVX512 reports whether gemmAsm runs the two-panel AVX-512 kernels;
// tests switch it off to compare them with the AVX2 kernels bit for bit.
var useAVX512 = hasAVX512

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
	p = Prepare(p, k, n)
	PackPanels(p, b, 0, p.Panels())
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
	p = Prepare(p, k, n)
	PackTransPanels(p, bt, 0, p.Panels())
	return p
}

// Prepare returns p's storage (a new Packed if p is nil) sized for a k×n
// matrix, with no panel filled. PackPanels and PackTransPanels then fill
// panels q0 … q1−1 on demand, so that a caller may pack a block of panels
// just before the products that use it (while it is in cache) and pack
// different blocks on different goroutines. Every panel must be filled
// before a product reads it.
func Prepare(p *Packed, k, n int) *Packed {
	if k < 0 || n < 0 {
		panic("f64: Prepare: negative size")
	}
	p = p.resize(k, n)
	if p.hasRaw = !useAsm; p.hasRaw {
		p.raw = grow(p.raw, k*n)
	}
	return p
}

// PackPanels fills panels q0 … q1−1 of p (sized by Prepare) from the k×n
// row-major b, as PackTo would. It panics if len(b) ≠ k·n or the range is
// not within 0 … p.Panels().
func PackPanels(p *Packed, b []float64, q0, q1 int) {
	k, n := p.k, p.n
	if len(b) != k*n || q0 < 0 || q1 < q0 || q1 > p.Panels() {
		panic("f64: PackPanels: len(b) != k·n or panels out of range")
	}
	if q0 == q1 || k == 0 {
		return
	}
	packRows(p.panels, b, k, n, q0, q1)
	if p.hasRaw {
		j0, j1 := q0*panelWidth, min(q1*panelWidth, n)
		for r := range k {
			copy(p.raw[r*n+j0:r*n+j1], b[r*n+j0:r*n+j1])
		}
	}
}

// PackTransPanels fills panels q0 … q1−1 of p (sized by Prepare) from bt,
// the n×k transpose of the matrix, as PackTransTo would. It panics if
// len(bt) ≠ n·k or the range is not within 0 … p.Panels().
func PackTransPanels(p *Packed, bt []float64, q0, q1 int) {
	k, n := p.k, p.n
	if len(bt) != k*n || q0 < 0 || q1 < q0 || q1 > p.Panels() {
		panic("f64: PackTransPanels: len(bt) != k·n or panels out of range")
	}
	if q0 == q1 || k == 0 {
		return
	}
	packTransPanels(p.panels, bt, k, n, q0, q1)
	if p.hasRaw {
		for j := q0 * panelWidth; j < min(q1*panelWidth, n); j++ {
			for r, v := range bt[j*k : (j+1)*k] {
				p.raw[r*n+j] = v
			}
		}
	}
}

// packRowBlock is the number of rows of b that packRows moves to every
// panel before going on: each panel then receives packRowBlock·64
// contiguous bytes while the rows are read in order, rather than one
// column strip at a time down the whole matrix (for n a power of two that
// strided walk thrashes the cache and runs at a fraction of the speed).
const packRowBlock = 4

// packRows fills panels q0 … q1−1 from the k×n row-major b.
func packRows(panels, b []float64, k, n, q0, q1 int) {
	full := min(q1, n/panelWidth) // panels q0 … full−1 are 8 wide
	w := n - full*panelWidth      // width of panel full, if q1 reaches it
	for rb := 0; rb < k; rb += packRowBlock {
		re := min(rb+packRowBlock, k)
		if full > q0 {
			if useAsm {
				packRowsAsm(re-rb, full-q0, &b[rb*n+q0*panelWidth], n, &panels[(q0*k+rb)*panelWidth], k*panelWidth)
			} else {
				for q := q0; q < full; q++ {
					c0 := q * panelWidth
					base := (q*k + rb) * panelWidth
					for r := rb; r < re; r++ {
						copy(panels[base+(r-rb)*panelWidth:base+(r-rb+1)*panelWidth], b[r*n+c0:r*n+c0+panelWidth])
					}
				}
			}
		}
		if full < q1 && w > 0 {
			c0 := full * panelWidth
			base := (full*k + rb) * panelWidth
			for r := rb; r < re; r++ {
				d := panels[base+(r-rb)*panelWidth : base+(r-rb+1)*panelWidth]
				copy(d, b[r*n+c0:r*n+n])
				clear(d[w:])
			}
		}
	}
}

// packTransPanels fills panels q0 … q1−1 from bt (n×k row-major, the
// transpose of the packed matrix): row c0+j of bt, read in order, becomes
// column j of panel q = c0/8. The assembly path interleaves a panel's
// eight rows four entries at a time (4×4 transposes in registers).
func packTransPanels(panels, bt []float64, k, n, q0, q1 int) {
	for q := q0; q < q1; q++ {
		dst := panels[q*k*panelWidth : (q+1)*k*panelWidth]
		c0 := q * panelWidth
		w := min(panelWidth, n-c0)
		r0 := 0
		if w < panelWidth {
			clear(dst)
		} else if useAsm && k >= 4 {
			r0 = k &^ 3
			packTrans8Asm(r0, &bt[c0*k], k, &dst[0])
		}
		for j := 0; j < w; j++ {
			for r, v := range bt[(c0+j)*k+r0 : (c0+j+1)*k] {
				dst[(r0+r)*panelWidth+j] = v
			}
		}
	}
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
// row-major dst. It panics if the lengths are not m·n. It works in 32×32
// tiles; on the assembly path their full 4×4 blocks are transposed in
// registers.
func Transpose(dst, src []float64, m, n int) {
	TransposeCols(dst, src, m, n, 0, n)
}

// TransposeCols is Transpose restricted to columns j0 … j1−1 of src: it
// writes rows j0 … j1−1 of dst and leaves the others alone, so that
// goroutines may share a transposition. It panics if the lengths are not
// m·n or the range is not within 0 … n.
func TransposeCols(dst, src []float64, m, n, j0, j1 int) {
	if m < 0 || n < 0 || len(src) != m*n || len(dst) != m*n {
		panic("f64: Transpose: lengths are not m·n")
	}
	if j0 < 0 || j1 < j0 || j1 > n {
		panic("f64: TransposeCols: columns out of range")
	}
	const bs = 32
	for i0 := 0; i0 < m; i0 += bs {
		i1 := min(i0+bs, m)
		for t0 := j0; t0 < j1; t0 += bs {
			t1 := min(t0+bs, j1)
			i := i0
			if useAsm {
				nb := (t1 - t0) / 4
				for ; i+4 <= i1 && nb > 0; i += 4 {
					transpose4Asm(nb, &src[i*n+t0], n, &dst[t0*m+i], m)
				}
				// The columns past the last full block of 4, for the
				// rows done above.
				for r := i0; r < i; r++ {
					for j := t0 + 4*nb; j < t1; j++ {
						dst[j*m+r] = src[r*n+j]
					}
				}
			}
			for ; i < i1; i++ {
				row := src[i*n : i*n+t1]
				for j := t0; j < t1; j++ {
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
	gemm(m, a, b, c, 0, b.Panels(), false)
}

// GemmAdd sets c += a·B for the m×k row-major a and the m×n row-major c.
// Each entry is one running sum that starts from the entry's old value and
// adds the k products in order with fused multiply-adds: into a zero c it
// gives Gemm's bits, and in general it differs from adding a separately
// rounded a·B by rounding only.
func GemmAdd(m int, a []float64, b *Packed, c []float64) {
	gemm(m, a, b, c, 0, b.Panels(), true)
}

// Panels returns the number of column panels of the packed matrix,
// ⌈n/8⌉; panel q holds columns 8q … min(8q+8, n)−1.
func (p *Packed) Panels() int { return (p.n + panelWidth - 1) / panelWidth }

// GemmPanels is Gemm (or, with acc, GemmAdd) on the columns of panels
// q0 … q1−1 of B only: it sets (adds to) columns 8·q0 … min(8·q1, n)−1 of
// the m×n c and leaves the others alone. Every entry it computes has the
// bits Gemm (GemmAdd) gives it, so callers may split the columns of a
// product, as well as its rows, over goroutines. It panics unless
// 0 ≤ q0 ≤ q1 ≤ b.Panels().
func GemmPanels(m int, a []float64, b *Packed, c []float64, q0, q1 int, acc bool) {
	if q0 < 0 || q1 < q0 || q1 > b.Panels() {
		panic("f64: GemmPanels: panel range out of bounds")
	}
	gemm(m, a, b, c, q0, q1, acc)
}

func gemm(m int, a []float64, b *Packed, c []float64, q0, q1 int, acc bool) {
	k, n := b.k, b.n
	if len(a) != m*k || len(c) != m*n {
		panic("f64: Gemm: slice lengths do not match m×k·k×n")
	}
	if m == 0 || n == 0 || q0 == q1 {
		return
	}
	j0, j1 := q0*panelWidth, min(q1*panelWidth, n)
	if k == 0 {
		if !acc {
			for i := range m {
				clear(c[i*n+j0 : i*n+j1])
			}
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
			blas64.General{Rows: k, Cols: j1 - j0, Stride: n, Data: b.rowMajor()[j0:]},
			beta, blas64.General{Rows: m, Cols: j1 - j0, Stride: n, Data: c[j0:]})
		return
	}
	gemmAsm(m, k, n, a, b, c, q0, q1, acc)
}

// gemmAsm computes the columns of panels q0 … q1−1 of c. Panels are the
// outer loop, so that a panel is read from cache by every row block. With
// AVX-512, two full 8-wide panels go together, rows six at a time through
// kern6x16z; the rows left over, and every panel without AVX-512, go
// through gemmPanelRows. In an 8-wide panel, rows go six at a time
// through kern6x8 (twelve running sums, enough to keep both FMA pipes
// busy), then four at a time through kern4x8; in the narrower last panel,
// four at a time into a scratch tile. The last rows (fewer than four) go
// through the same kernel, reading a through kern4x8off's tables (rows at
// i·k, taps 0 … k−1). Every entry is the same chain of fused
// multiply-adds over p = 0, 1, … in every kernel. With acc the sums start
// from c's values instead of zero.
func gemmAsm(m, k, n int, a []float64, b *Packed, c []float64, q0, q1 int, acc bool) {
	panels := b.panels
	var tile [gemmMR * panelWidth]float64
	for q := q0; q < q1; {
		i := 0
		if useAVX512 && q+1 < q1 && (q+2)*panelWidth <= n {
			// Two full panels at once, six rows at a time, in 8-lane
			// registers (the same bits as kern6x8 on each panel).
			c0 := q * panelWidth
			for ; i+6 <= m; i += 6 {
				if acc {
					kern6x16zacc(k, &a[i*k], k, &panels[q*k*panelWidth], k*panelWidth, &c[i*n+c0], n)
				} else {
					kern6x16z(k, &a[i*k], k, &panels[q*k*panelWidth], k*panelWidth, &c[i*n+c0], n)
				}
			}
			gemmPanelRows(m, k, n, a, panels, c, q, i, acc, &tile)
			gemmPanelRows(m, k, n, a, panels, c, q+1, i, acc, &tile)
			q += 2
			continue
		}
		gemmPanelRows(m, k, n, a, panels, c, q, 0, acc, &tile)
		q++
	}
}

// gemmMR is the number of rows of kern4x8 and of gemmAsm's scratch tile.
const gemmMR = 4

// gemmPanelRows computes rows i … m−1 of the columns of panel q of c,
// with tile as scratch for edge tiles.
func gemmPanelRows(m, k, n int, a, panels, c []float64, q, i int, acc bool, tile *[gemmMR * panelWidth]float64) {
	const mr = gemmMR
	panel := panels[q*k*panelWidth:]
	c0 := q * panelWidth
	w := min(panelWidth, n-c0)
	if w == panelWidth {
		for ; i+6 <= m; i += 6 {
			if acc {
				kern6x8acc(k, &a[i*k], k, &panel[0], &c[i*n+c0], n)
			} else {
				kern6x8(k, &a[i*k], k, &panel[0], &c[i*n+c0], n)
			}
		}
		for ; i+mr <= m; i += mr {
			if acc {
				kern4x8acc(k, &a[i*k], k, &panel[0], &c[i*n+c0], n)
			} else {
				kern4x8(k, &a[i*k], k, &panel[0], &c[i*n+c0], n)
			}
		}
	} else {
		for ; i+mr <= m; i += mr {
			if acc {
				for r := 0; r < mr; r++ {
					copy(tile[r*panelWidth:r*panelWidth+w], c[(i+r)*n+c0:(i+r)*n+c0+w])
				}
				kern4x8acc(k, &a[i*k], k, &panel[0], &tile[0], panelWidth)
			} else {
				kern4x8(k, &a[i*k], k, &panel[0], &tile[0], panelWidth)
			}
			for r := 0; r < mr; r++ {
				copy(c[(i+r)*n+c0:(i+r)*n+c0+w], tile[r*panelWidth:r*panelWidth+w])
			}
		}
	}
	if i == m {
		return
	}
	// The last h < 4 rows: kern4x8off reads row i+r of a at
	// (i+r)·k + p, with the last row repeated into the unused tile
	// rows; all indices are below m·k = len(a).
	h := m - i
	var rr [mr]int
	for r := range rr {
		rr[r] = (i + min(r, h-1)) * k
	}
	offs := iota(k)
	if acc {
		for r := 0; r < h; r++ {
			copy(tile[r*panelWidth:r*panelWidth+w], c[(i+r)*n+c0:(i+r)*n+c0+w])
		}
		kern4x8offacc(k, &a[0], &rr, &offs[0], &panel[0], &tile[0], panelWidth)
	} else {
		kern4x8off(k, &a[0], &rr, &offs[0], &panel[0], &tile[0], panelWidth)
	}
	for r := 0; r < h; r++ {
		copy(c[(i+r)*n+c0:(i+r)*n+c0+w], tile[r*panelWidth:r*panelWidth+w])
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
