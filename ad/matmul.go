package ad

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// gemm computes c = alpha·op(a)·op(b) + beta·c on row-major flat buffers,
// where op(a) is m×k and op(b) is k×n.
func gemm(ta, tb bool, m, n, k int, alpha float64, a []float64, b []float64, beta float64, c []float64) {
	if m == 0 || n == 0 {
		return
	}
	tA, tB := blas.NoTrans, blas.NoTrans
	ar, ac := m, k
	if ta {
		tA = blas.Trans
		ar, ac = k, m
	}
	br, bc := k, n
	if tb {
		tB = blas.Trans
		br, bc = n, k
	}
	if k == 0 {
		for i := range c[:m*n] {
			c[i] *= beta
		}
		return
	}
	blas64.Gemm(tA, tB, alpha,
		blas64.General{Rows: ar, Cols: ac, Stride: ac, Data: a},
		blas64.General{Rows: br, Cols: bc, Stride: bc, Data: b},
		beta,
		blas64.General{Rows: m, Cols: n, Stride: n, Data: c})
}

// MatMul returns the matrix product a·b over the last two axes.
//
// Supported shapes: (m,k)·(k,n) → (m,n); (B,m,k)·(B,k,n) → (B,m,n), one
// product per batch element; (B,m,k)·(k,n) → (B,m,n), the same right factor
// for every batch element; and (m,k)·(B,k,n) → (B,m,n).
func MatMul(a, b *Var) *Var {
	t := tapeOf(a, b)
	if t == nil || !t.check("MatMul", a, b) {
		return deadOf(t)
	}
	ra, rb := len(a.shape), len(b.shape)
	if ra < 2 || rb < 2 || ra > 3 || rb > 3 {
		return t.failf("MatMul: want rank-2 or rank-3 operands, got shapes %v and %v", a.shape, b.shape)
	}
	m, k := a.shape[ra-2], a.shape[ra-1]
	k2, n := b.shape[rb-2], b.shape[rb-1]
	if k != k2 {
		return t.failf("MatMul: inner dimensions differ: %v · %v", a.shape, b.shape)
	}
	batch := 1
	switch {
	case ra == 3 && rb == 3:
		if a.shape[0] != b.shape[0] {
			return t.failf("MatMul: batch sizes differ: %v · %v", a.shape, b.shape)
		}
		batch = a.shape[0]
	case ra == 3:
		batch = a.shape[0]
	case rb == 3:
		batch = b.shape[0]
	}
	var shape []int
	if ra == 2 && rb == 2 {
		shape = []int{m, n}
	} else {
		shape = []int{batch, m, n}
	}
	y := t.newOp(shape, backMatMul, a, b)
	y.a, y.b = a, b
	y.axis = batch
	matmulForward(a, b, y, batch, m, n, k)
	return y
}

func matmulForward(a, b, y *Var, batch, m, n, k int) {
	ra, rb := len(a.shape), len(b.shape)
	switch {
	case rb == 2:
		// (B·m, k)·(k, n) in one product.
		gemm(false, false, batch*m, n, k, 1, a.val, b.val, 0, y.val)
	case ra == 2:
		for p := 0; p < batch; p++ {
			gemm(false, false, m, n, k, 1, a.val, b.val[p*k*n:(p+1)*k*n], 0, y.val[p*m*n:(p+1)*m*n])
		}
	default:
		for p := 0; p < batch; p++ {
			gemm(false, false, m, n, k, 1, a.val[p*m*k:(p+1)*m*k], b.val[p*k*n:(p+1)*k*n], 0, y.val[p*m*n:(p+1)*m*n])
		}
	}
}

func backMatMul(y *Var) {
	a, b := y.a, y.b
	batch := y.axis
	ra, rb := len(a.shape), len(b.shape)
	m, k := a.shape[ra-2], a.shape[ra-1]
	n := b.shape[rb-1]
	g := y.grad
	if a.needGrad {
		ga := a.gradBuf()
		// ā = ȳ·bᵀ
		switch {
		case rb == 2:
			gemm(false, true, batch*m, k, n, 1, g, b.val, 1, ga)
		case ra == 2:
			for p := 0; p < batch; p++ {
				gemm(false, true, m, k, n, 1, g[p*m*n:(p+1)*m*n], b.val[p*k*n:(p+1)*k*n], 1, ga)
			}
		default:
			for p := 0; p < batch; p++ {
				gemm(false, true, m, k, n, 1, g[p*m*n:(p+1)*m*n], b.val[p*k*n:(p+1)*k*n], 1, ga[p*m*k:(p+1)*m*k])
			}
		}
	}
	if b.needGrad {
		gb := b.gradBuf()
		// b̄ = aᵀ·ȳ
		switch {
		case rb == 2:
			gemm(true, false, k, n, batch*m, 1, a.val, g, 1, gb)
		case ra == 2:
			for p := 0; p < batch; p++ {
				gemm(true, false, k, n, m, 1, a.val, g[p*m*n:(p+1)*m*n], 1, gb[p*k*n:(p+1)*k*n])
			}
		default:
			for p := 0; p < batch; p++ {
				gemm(true, false, k, n, m, 1, a.val[p*m*k:(p+1)*m*k], g[p*m*n:(p+1)*m*n], 1, gb[p*k*n:(p+1)*k*n])
			}
		}
	}
}

// Transpose swaps the last two axes: (…, m, n) → (…, n, m).
func Transpose(x *Var) *Var {
	t := tapeOf(x)
	if t == nil || !t.check("Transpose", x) {
		return deadOf(t)
	}
	r := len(x.shape)
	if r < 2 {
		return t.failf("Transpose: want rank >= 2, got shape %v", x.shape)
	}
	m, n := x.shape[r-2], x.shape[r-1]
	shape := append(append(make([]int, 0, r), x.shape[:r-2]...), n, m)
	y := t.newOp(shape, backTranspose, x)
	y.a = x
	transposeBlocks(x.val, y.val, m, n, false)
	return y
}

// transposeBlocks writes (or adds, if add) the transpose of each m×n block
// of src into dst.
func transposeBlocks(src, dst []float64, m, n int, add bool) {
	bs := m * n
	if bs == 0 {
		return
	}
	for off := 0; off+bs <= len(src); off += bs {
		s, d := src[off:off+bs], dst[off:off+bs]
		for i := 0; i < m; i++ {
			row := s[i*n : (i+1)*n]
			for j, v := range row {
				if add {
					d[j*m+i] += v
				} else {
					d[j*m+i] = v
				}
			}
		}
	}
}

func backTranspose(y *Var) {
	if !y.a.needGrad {
		return
	}
	r := len(y.shape)
	// y is n×m blocks; its transpose is x's m×n layout.
	transposeBlocks(y.grad, y.a.gradBuf(), y.shape[r-2], y.shape[r-1], true)
}
