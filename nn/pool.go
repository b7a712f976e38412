package nn

import (
	"github.com/permlab/permlab/ad"
)

// MaxPool2D takes the maximum over Size×Size windows of an NCHW batch,
// moving Stride pixels between windows (Stride 0 means Stride = Size, the
// usual non-overlapping pooling). An input (N, C, H, W) gives
// (N, C, H′, W′) with H′ = ⌊(H − Size)/Stride⌋ + 1 and likewise W′; there
// is no padding. The gradient of each output flows to the position of its
// window's maximum (the first, in row-major order, on ties).
type MaxPool2D struct {
	Size, Stride int
}

// Params returns nil.
func (MaxPool2D) Params() []*ad.Param { return nil }

// Forward pools x of shape (N, C, H, W).
func (m MaxPool2D) Forward(t *ad.Tape, x *ad.Var) *ad.Var {
	if !ready(t, x) {
		return dead(t)
	}
	size, stride := m.Size, m.Stride
	if stride == 0 {
		stride = size
	}
	if size < 1 || stride < 1 {
		return fail(t, "MaxPool2D: size %d and stride %d must be >= 1", m.Size, m.Stride)
	}
	sh := x.Shape()
	if len(sh) != 4 {
		return fail(t, "MaxPool2D: want input shape (N, C, H, W), got %v", sh)
	}
	h, w := sh[2], sh[3]
	if h < size || w < size {
		return fail(t, "MaxPool2D: window %d does not fit input %d×%d", size, h, w)
	}
	ho, wo := (h-size)/stride+1, (w-size)/stride+1
	planes := sh[0] * sh[1]
	xv := x.Value()
	y := t.AllocRaw(planes * ho * wo)
	// arg[o] is the index into x of output o's maximum, kept in a tape
	// buffer (indices below 2⁵³ are exact in a float64) so that it is
	// reused from step to step instead of allocated.
	arg := t.AllocRaw(len(y))
	for pl := range planes {
		in := xv[pl*h*w : (pl+1)*h*w]
		for i := range ho {
			for j := range wo {
				best := (i*stride)*w + j*stride
				for u := range size {
					r := (i*stride+u)*w + j*stride
					for v := range size {
						if in[r+v] > in[best] {
							best = r + v
						}
					}
				}
				o := (pl*ho+i)*wo + j
				y[o] = in[best]
				arg[o] = float64(pl*h*w + best)
			}
		}
	}
	return t.Custom([]int{sh[0], sh[1], ho, wo}, y, []*ad.Var{x}, func(gy []float64, gIn [][]float64) {
		if gx := gIn[0]; gx != nil {
			for o, g := range gy {
				gx[int(arg[o])] += g
			}
		}
	})
}
