package f64

// GemmGather sets c = A·B for the m×k matrix A that is given implicitly by
//
//	A[i][p] = x[rows[i] + offs[p]],   m = len(rows), k = len(offs),
//
// and the packed k×n matrix B; c is m×n row-major. It is the product of an
// im2col matrix with a filter bank without the im2col copy: for a
// convolution, x is one zero-padded sample, rows[i] is the offset of
// output pixel i's window and offs[p] the offset of filter tap p within a
// window. The result is exactly Gemm's on the explicit A, on either path.
// It panics if k differs from B's, c is not m·n long, or an index
// rows[i] + offs[p] falls outside x.
func GemmGather(x []float64, rows, offs []int, b *Packed, c []float64) {
	gemmGather(x, rows, offs, b, c, false)
}

// GemmGatherAdd sets c += A·B for the implicit A of GemmGather: each entry
// is one running sum that starts from its old value, exactly GemmAdd's on
// the explicit A. With x a k×m row-major matrix a, rows[i] = i and
// offs[p] = p·m, A is aᵀ, so it also computes c += aᵀ·B without a
// transposed copy of a.
func GemmGatherAdd(x []float64, rows, offs []int, b *Packed, c []float64) {
	gemmGather(x, rows, offs, b, c, true)
}

func gemmGather(x []float64, rows, offs []int, b *Packed, c []float64, acc bool) {
	m, k, n := len(rows), b.k, b.n
	if len(offs) != k || len(c) != m*n {
		panic("f64: GemmGather: len(offs) != k or len(c) != m·n")
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
	lo, hi := rows[0], rows[0]
	for _, r := range rows {
		lo, hi = min(lo, r), max(hi, r)
	}
	olo, ohi := offs[0], offs[0]
	for _, o := range offs {
		olo, ohi = min(olo, o), max(ohi, o)
	}
	if lo+olo < 0 || hi+ohi >= len(x) {
		panic("f64: GemmGather: index outside x")
	}
	if !useAsm {
		a := make([]float64, m*k)
		for i, r := range rows {
			for p, o := range offs {
				a[i*k+p] = x[r+o]
			}
		}
		gemm(m, a, b, c, 0, b.Panels(), acc)
		return
	}
	// Row blocks are the outer loop: the ≤ 4·k entries of A that a block
	// reads stay in L1 cache while the panels stream past, and the block's
	// rows of c are written (and, with acc, read) in order. With the panels
	// outer, c would be walked down its columns, one tile every 4 rows,
	// which for a power-of-two n defeats both the cache and the prefetcher.
	const mr = 4
	var tile [mr * panelWidth]float64
	np := (n + panelWidth - 1) / panelWidth
	for i0 := 0; i0 < m; i0 += mr {
		h := min(mr, m-i0)
		var rr [mr]int
		for r := range rr {
			// Rows past the end repeat the last one; the tile computes
			// them and drops them.
			rr[r] = rows[i0+min(r, h-1)]
		}
		for q := 0; q < np; q++ {
			panel := b.panels[q*k*panelWidth:]
			c0 := q * panelWidth
			w := min(panelWidth, n-c0)
			if w == panelWidth && h == mr {
				if acc {
					kern4x8offacc(k, &x[0], &rr, &offs[0], &panel[0], &c[i0*n+c0], n)
				} else {
					kern4x8off(k, &x[0], &rr, &offs[0], &panel[0], &c[i0*n+c0], n)
				}
				continue
			}
			if acc {
				for r := 0; r < h; r++ {
					copy(tile[r*panelWidth:r*panelWidth+w], c[(i0+r)*n+c0:(i0+r)*n+c0+w])
				}
				kern4x8offacc(k, &x[0], &rr, &offs[0], &panel[0], &tile[0], panelWidth)
			} else {
				kern4x8off(k, &x[0], &rr, &offs[0], &panel[0], &tile[0], panelWidth)
			}
			for r := 0; r < h; r++ {
				copy(c[(i0+r)*n+c0:(i0+r)*n+c0+w], tile[r*panelWidth:r*panelWidth+w])
			}
		}
	}
}
