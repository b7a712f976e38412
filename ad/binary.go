package ad

import "github.com/permlab/permlab/internal/par"

// bcast says how an operand's elements map onto the output's.
type bcast uint8

const (
	bFull   bcast = iota // same shape as the output
	bScalar              // one element
	bTile                // a suffix of the output shape, tiled over leading axes
	bCol                 // output shape with last axis 1: one value per row
)

// index maps a flat output index to the operand's flat index.
func (m bcast) index(i, size, last int) int {
	switch m {
	case bScalar:
		return 0
	case bTile:
		return i % size
	case bCol:
		return i / last
	}
	return i
}

// broadcastModes decides the output shape and the modes of a and b. ok is
// false if the shapes are not compatible under the package's rules.
func broadcastModes(a, b []int) (out []int, ma, mb bcast, ok bool) {
	sa, _ := shapeSize(a)
	sb, _ := shapeSize(b)
	if sameShape(a, b) {
		return a, bFull, bFull, true
	}
	if sb == 1 {
		return a, bFull, bScalar, true
	}
	if sa == 1 {
		return b, bScalar, bFull, true
	}
	if m, ok := smallerMode(a, b); ok {
		return a, bFull, m, true
	}
	if m, ok := smallerMode(b, a); ok {
		return b, m, bFull, true
	}
	return nil, 0, 0, false
}

// smallerMode reports how small broadcasts against big, if it does.
func smallerMode(big, small []int) (bcast, bool) {
	if len(small) < len(big) && len(small) > 0 && sameShape(big[len(big)-len(small):], small) {
		return bTile, true
	}
	if len(small) == len(big) && len(big) > 0 && small[len(small)-1] == 1 && sameShape(big[:len(big)-1], small[:len(small)-1]) {
		return bCol, true
	}
	return 0, false
}

type binOp uint8

const (
	opAdd binOp = iota
	opSub
	opMul
	opDiv
)

var binNames = [...]string{"Add", "Sub", "Mul", "Div"}

func binary(op binOp, a, b *Var) *Var {
	t := tapeOf(a, b)
	name := binNames[op]
	if t == nil || !t.check(name, a, b) {
		return deadOf(t)
	}
	shape, ma, mb, ok := broadcastModes(a.shape, b.shape)
	if !ok {
		return t.failf("%s: shapes %v and %v do not broadcast", name, a.shape, b.shape)
	}
	y := t.newOp(shape, backBinary, a, b)
	y.a, y.b = a, b
	y.axis = int(op) | int(ma)<<4 | int(mb)<<8
	last := 1
	if len(shape) > 0 {
		last = shape[len(shape)-1]
	}
	av, bv, out := a.val, b.val, y.val
	if ma == bFull && mb == bFull {
		if len(out) <= par.Grain {
			binFull(op, out, av, bv)
		} else {
			par.Range(len(out), par.Grain, func(lo, hi int) { binFull(op, out[lo:hi], av[lo:hi], bv[lo:hi]) })
		}
		return y
	}
	na, nb := len(av), len(bv)
	if op == opAdd && ma == bFull && mb == bTile && nb > 0 {
		// A bias added to every row, as in a dense layer: a plain loop
		// per row, the same sums as the general loop below.
		for off := 0; off+nb <= len(out); off += nb {
			o, x := out[off:off+nb], av[off:off+nb]
			for j, z := range bv {
				o[j] = x[j] + z
			}
		}
		return y
	}
	for i := range out {
		x := av[ma.index(i, na, last)]
		z := bv[mb.index(i, nb, last)]
		switch op {
		case opAdd:
			out[i] = x + z
		case opSub:
			out[i] = x - z
		case opMul:
			out[i] = x * z
		case opDiv:
			out[i] = x / z
		}
	}
	return y
}

// binFull sets out = av op bv for operands of out's shape.
func binFull(op binOp, out, av, bv []float64) {
	av, bv = av[:len(out)], bv[:len(out)]
	switch op {
	case opAdd:
		for i := range out {
			out[i] = av[i] + bv[i]
		}
	case opSub:
		for i := range out {
			out[i] = av[i] - bv[i]
		}
	case opMul:
		for i := range out {
			out[i] = av[i] * bv[i]
		}
	case opDiv:
		for i := range out {
			out[i] = av[i] / bv[i]
		}
	}
}

func backBinary(y *Var) {
	op := binOp(y.axis & 0xf)
	ma := bcast(y.axis >> 4 & 0xf)
	mb := bcast(y.axis >> 8 & 0xf)
	a, b := y.a, y.b
	if a.needGrad {
		backOperand(y, a, b, ma, mb, op, true)
	}
	if b.needGrad {
		backOperand(y, b, a, mb, ma, op, false)
	}
}

// backOperand adds y's adjoint contribution to the operand x (a when
// first, else b), whose partner in the op is z. The common cases, an
// operand of the output's shape and a tiled one under Add or Sub, run as
// plain loops; they add the same terms in the same order as the general
// loop.
func backOperand(y, x, z *Var, mx, mz bcast, op binOp, first bool) {
	g := y.grad
	sign := 1.0
	if op == opSub && !first {
		sign = -1
	}
	if mx == bFull && (op == opAdd || op == opSub) {
		// A fresh adjoint is written as 0 ± v rather than zeroed and
		// then updated: the same operations on the same +0, so the same
		// bits (0 + v is v with a −0 turned into +0; the compiler keeps
		// the addition).
		gx, acc := x.gradOut()
		if !acc {
			clear(gx[len(g):])
			gx = gx[:len(g)]
		}
		switch {
		case sign > 0 && acc:
			for i, v := range g {
				gx[i] += v
			}
		case sign > 0:
			for i, v := range g {
				gx[i] = 0 + v
			}
		case acc:
			for i, v := range g {
				gx[i] -= v
			}
		default:
			for i, v := range g {
				gx[i] = 0 - v
			}
		}
		return
	}
	gx := x.gradBuf()
	switch {
	case mx == bFull && op == opMul && mz == bFull:
		zv := z.val[:len(g)]
		for i, v := range g {
			gx[i] += v * zv[i]
		}
		return
	case mx == bTile && (op == opAdd || op == opSub) && len(gx) > 0:
		nx := len(gx)
		for off := 0; off+nx <= len(g); off += nx {
			blk := g[off : off+nx]
			if sign > 0 {
				for j, v := range blk {
					gx[j] += v
				}
			} else {
				for j, v := range blk {
					gx[j] -= v
				}
			}
		}
		return
	}
	last := 1
	if len(y.shape) > 0 {
		last = y.shape[len(y.shape)-1]
	}
	nx, nz := len(x.val), len(z.val)
	for i, v := range g {
		ix := mx.index(i, nx, last)
		switch op {
		case opAdd:
			gx[ix] += v
		case opSub:
			if first {
				gx[ix] += v
			} else {
				gx[ix] -= v
			}
		case opMul:
			gx[ix] += v * z.val[mz.index(i, nz, last)]
		case opDiv:
			if first {
				gx[ix] += v / z.val[mz.index(i, nz, last)]
			} else {
				d := x.val[ix]
				gx[ix] -= v * z.val[mz.index(i, nz, last)] / (d * d)
			}
		}
	}
}

// Add returns a + b with broadcasting (see the package doc).
func Add(a, b *Var) *Var { return binary(opAdd, a, b) }

// Sub returns a - b with broadcasting.
func Sub(a, b *Var) *Var { return binary(opSub, a, b) }

// Mul returns the elementwise product a ⊙ b with broadcasting.
func Mul(a, b *Var) *Var { return binary(opMul, a, b) }

// Div returns the elementwise quotient a ⊘ b with broadcasting.
func Div(a, b *Var) *Var { return binary(opDiv, a, b) }
