package f32

import "fmt"

const (
	rowBlock   = 6  // rows of the left factor per packed block
	panelWidth = 16 // columns of the right factor per packed panel
)

// useAVX512 reports whether Gemm runs the two-panel AVX-512 kernel; tests
// switch it off to compare it with the AVX2 kernel bit for bit.
var useAVX512 = hasAVX512

// useAsm reports whether the assembly kernel runs. Tests switch it off to
// check the Go loop against the same expectations.
var useAsm = hasAsm

// Left is an m×k matrix rounded to float32 and stored as the left factor
// of Gemm: row-major, with zero rows after row m up to a multiple of six.
type Left struct {
	m, k int
	data []float32
}

// PrepareLeft returns l's storage (a new Left if l is nil) sized for an
// m×k matrix, with no row filled; PackLeft fills them.
func PrepareLeft(l *Left, m, k int) *Left {
	if m < 0 || k < 0 {
		panic("f32: PrepareLeft: negative size")
	}
	if l == nil {
		l = new(Left)
	}
	l.m, l.k = m, k
	l.data = grow(l.data, l.Blocks()*rowBlock*k)
	clear(l.data[m*k:])
	return l
}

// Blocks returns the number of row blocks, ⌈m/6⌉; block i holds rows
// 6i … min(6i+6, m)−1.
func (l *Left) Blocks() int { return (l.m + rowBlock - 1) / rowBlock }

// PackLeft fills the rows of blocks b0 … b1−1 of l from the m×k row-major
// a. It panics if len(a) ≠ m·k or the range is not within 0 … l.Blocks().
func PackLeft(l *Left, a []float64, b0, b1 int) {
	m, k := l.m, l.k
	if len(a) != m*k || b0 < 0 || b1 < b0 || b1 > l.Blocks() {
		panic("f32: PackLeft: len(a) != m·k or blocks out of range")
	}
	i0, i1 := min(b0*rowBlock, m)*k, min(b1*rowBlock, m)*k
	Round(l.data[i0:i1], a[i0:i1])
}

// PackLeftTrans fills the rows of blocks b0 … b1−1 of l (m×k) from at,
// the k×m row-major transpose of the matrix l holds: row i of l is column
// i of at. The entries are those PackLeft would store from the transpose
// of at, without the transposed copy: 4×4 blocks are rounded and
// transposed in registers. It panics if len(at) ≠ k·m or the range is not
// within 0 … l.Blocks().
func PackLeftTrans(l *Left, at []float64, b0, b1 int) {
	m, k := l.m, l.k
	if len(at) != k*m || b0 < 0 || b1 < b0 || b1 > l.Blocks() {
		panic("f32: PackLeftTrans: len(at) != k·m or blocks out of range")
	}
	i0, i1 := min(b0*rowBlock, m), min(b1*rowBlock, m)
	if i0 == i1 || k == 0 {
		return
	}
	m4, k4 := 0, 0 // rows i0 … i0+m4−1, columns below k4 done by assembly
	if useAsm {
		m4, k4 = (i1-i0)&^3, k&^3
		if m4 > 0 && k4 > 0 {
			packLeftTransAsm(m4, k4, &at[i0], m, &l.data[i0*k], k)
		}
	}
	for i := i0; i < i1; i++ {
		row := l.data[i*k : (i+1)*k]
		p0 := 0
		if i < i0+m4 {
			p0 = k4
		}
		for p := p0; p < k; p++ {
			row[p] = float32(at[p*m+i])
		}
	}
}

// Round sets dst[i] to src[i] rounded to the nearest float32. It panics if
// the lengths differ.
func Round(dst []float32, src []float64) {
	if len(dst) != len(src) {
		panic("f32: Round: lengths differ")
	}
	n := 0
	if useAsm {
		n = len(src) &^ (panelWidth - 1)
		if n > 0 {
			cvtAsm(n, &src[0], &dst[0])
		}
	}
	for i := n; i < len(src); i++ {
		dst[i] = float32(src[i])
	}
}

// Packed is a k×n matrix rounded to float32 and stored as the right factor
// of Gemm: ⌈n/16⌉ panels of sixteen columns, each panel k rows of sixteen
// entries, zero past column n.
type Packed struct {
	k, n   int
	panels []float32
}

// Prepare returns p's storage (a new Packed if p is nil) sized for a k×n
// matrix, with no panel filled; PackPanels fills them.
func Prepare(p *Packed, k, n int) *Packed {
	if k < 0 || n < 0 {
		panic("f32: Prepare: negative size")
	}
	if p == nil {
		p = new(Packed)
	}
	p.k, p.n = k, n
	p.panels = grow(p.panels, p.Panels()*panelWidth*k)
	return p
}

// Panels returns the number of column panels, ⌈n/16⌉; panel q holds
// columns 16q … min(16q+16, n)−1.
func (p *Packed) Panels() int { return (p.n + panelWidth - 1) / panelWidth }

// PackPanels fills panels q0 … q1−1 of p from the k×n row-major b, row by
// row, so that b is read in order. It panics if len(b) ≠ k·n or the range
// is not within 0 … p.Panels().
func PackPanels(p *Packed, b []float64, q0, q1 int) {
	k, n := p.k, p.n
	if len(b) != k*n || q0 < 0 || q1 < q0 || q1 > p.Panels() {
		panic("f32: PackPanels: len(b) != k·n or panels out of range")
	}
	if k == 0 || q0 == q1 {
		return
	}
	full := min(q1, n/panelWidth) // panels q0 … full−1 are 16 wide
	q := q0
	if useAsm && full > q0 {
		packPanelsAsm(k, full-q0, &b[q0*panelWidth], n, &p.panels[q0*panelWidth*k], panelWidth*k)
		q = full
	}
	for ; q < q1; q++ {
		dst := p.panels[q*panelWidth*k : (q+1)*panelWidth*k]
		c0 := q * panelWidth
		w := min(panelWidth, n-c0)
		if w < panelWidth {
			clear(dst)
		}
		for r := range k {
			d := dst[r*panelWidth : r*panelWidth+w]
			for j, v := range b[r*n+c0 : r*n+c0+w] {
				d[j] = float32(v)
			}
		}
	}
}

// PackPanelsTrans fills panels q0 … q1−1 of p (k×n) from bt, the n×k
// row-major transpose of the matrix p holds: panel q takes rows
// 16q … 16q+15 of bt as its columns. The entries are those PackPanels
// would store from the transpose of bt, without the transposed copy: 4×4
// blocks are rounded and transposed in registers. It panics if
// len(bt) ≠ n·k or the range is not within 0 … p.Panels().
func PackPanelsTrans(p *Packed, bt []float64, q0, q1 int) {
	k, n := p.k, p.n
	if len(bt) != k*n || q0 < 0 || q1 < q0 || q1 > p.Panels() {
		panic("f32: PackPanelsTrans: len(bt) != n·k or panels out of range")
	}
	if k == 0 || q0 == q1 {
		return
	}
	full := min(q1, n/panelWidth) // panels q0 … full−1 are 16 wide
	p0 := 0                       // rows of the full panels below p0 are filled
	if useAsm && full > q0 {
		p0 = k &^ 3
		if p0 > 0 {
			packTransAsm(p0, full-q0, &bt[q0*panelWidth*k], k, &p.panels[q0*panelWidth*k], panelWidth*k)
		}
	}
	for q := q0; q < q1; q++ {
		dst := p.panels[q*panelWidth*k : (q+1)*panelWidth*k]
		c0 := q * panelWidth
		w := min(panelWidth, n-c0)
		r0 := 0
		if q < full {
			r0 = p0
		} else if w < panelWidth {
			clear(dst)
		}
		for j := range w {
			row := bt[(c0+j)*k : (c0+j+1)*k]
			for r := r0; r < k; r++ {
				dst[r*panelWidth+j] = float32(row[r])
			}
		}
	}
}

// Gemm sets (with acc, adds to) the entries of the m×n row-major c in row
// blocks b0 … b1−1 of a and column panels q0 … q1−1 of b to those of the
// product a·b, summed in float32 (see the package documentation), and
// leaves the other entries alone. Every entry it computes has the same
// bits however a product is split into calls. It panics if the shapes do
// not match or a range is out of bounds.
func Gemm(a *Left, b0, b1 int, b *Packed, q0, q1 int, c []float64, acc bool) {
	m, k, n := a.m, a.k, b.n
	if b.k != k || len(c) != m*n {
		panic(fmt.Sprintf("f32: Gemm: shapes %d×%d · %d×%d into %d entries", m, k, b.k, n, len(c)))
	}
	if b0 < 0 || b1 < b0 || b1 > a.Blocks() || q0 < 0 || q1 < q0 || q1 > b.Panels() {
		panic("f32: Gemm: blocks or panels out of range")
	}
	if k == 0 {
		if !acc {
			for i := b0 * rowBlock; i < min(b1*rowBlock, m); i++ {
				clear(c[i*n+q0*panelWidth : i*n+min(q1*panelWidth, n)])
			}
		}
		return
	}
	var tile [rowBlock * panelWidth]float64
	for q := q0; q < q1; {
		if useAVX512 && q+1 < q1 && (q+2)*panelWidth <= n {
			// Two full panels at once: whole row blocks through the
			// 16-lane kernel (the same bits as kernel on each panel),
			// a short last block panel by panel.
			c0 := q * panelWidth
			for blk := b0; blk < b1; blk++ {
				r0 := blk * rowBlock
				if m-r0 < rowBlock {
					gemmTile(a, blk, b, q, c, acc, &tile)
					gemmTile(a, blk, b, q+1, c, acc, &tile)
					continue
				}
				ab := a.data[blk*rowBlock*k:]
				if acc {
					kern6x32zacc(k, &ab[0], k, &b.panels[q*panelWidth*k], panelWidth*k, &c[r0*n+c0], n)
				} else {
					kern6x32z(k, &ab[0], k, &b.panels[q*panelWidth*k], panelWidth*k, &c[r0*n+c0], n)
				}
			}
			q += 2
			continue
		}
		for blk := b0; blk < b1; blk++ {
			gemmTile(a, blk, b, q, c, acc, &tile)
		}
		q++
	}
}

// gemmTile computes the tile of c in row block blk and column panel q by
// kernel, an edge tile through scratch.
func gemmTile(a *Left, blk int, b *Packed, q int, c []float64, acc bool, tile *[rowBlock * panelWidth]float64) {
	m, k, n := a.m, a.k, b.n
	panel := b.panels[q*panelWidth*k : (q+1)*panelWidth*k]
	c0 := q * panelWidth
	w := min(panelWidth, n-c0)
	ab := a.data[blk*rowBlock*k : (blk+1)*rowBlock*k]
	r0 := blk * rowBlock
	h := min(rowBlock, m-r0)
	if w == panelWidth && h == rowBlock {
		kernel(k, ab, panel, c[r0*n+c0:], n, acc)
		return
	}
	// An edge tile goes through the same kernel into scratch.
	if acc {
		for r := range h {
			copy(tile[r*panelWidth:r*panelWidth+w], c[(r0+r)*n+c0:(r0+r)*n+c0+w])
		}
	}
	kernel(k, ab, panel, tile[:], panelWidth, acc)
	for r := range h {
		copy(c[(r0+r)*n+c0:(r0+r)*n+c0+w], tile[r*panelWidth:r*panelWidth+w])
	}
}

// kernel computes the 6×16 tile at c (row stride ldc, at least six rows
// of sixteen entries from c[0]) from six row-major rows of length k and a
// panel.
func kernel(k int, a, b []float32, c []float64, ldc int, acc bool) {
	_ = c[(rowBlock-1)*ldc+panelWidth-1]
	if useAsm {
		if acc {
			kern6x16acc(k, &a[0], k, &b[0], &c[0], ldc)
		} else {
			kern6x16(k, &a[0], k, &b[0], &c[0], ldc)
		}
		return
	}
	var s [rowBlock][panelWidth]float32
	for p := range k {
		bp := (*[panelWidth]float32)(b[p*panelWidth:])
		for r := range rowBlock {
			ar := a[r*k+p]
			sr := &s[r]
			for j, bv := range bp {
				sr[j] += ar * bv
			}
		}
	}
	for r := range s {
		cr := c[r*ldc : r*ldc+panelWidth]
		for j, v := range s[r] {
			if acc {
				cr[j] += float64(v)
			} else {
				cr[j] = float64(v)
			}
		}
	}
}

func grow(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}
