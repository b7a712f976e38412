package nn

import (
	"fmt"
	"math/rand/v2"
	"sync"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/internal/f64"
)

// Conv2D is a two-dimensional convolution (strictly, a cross-correlation,
// as in every deep-learning library) on NCHW batches. For an input x of
// shape (N, C, H, W) it returns y of shape (N, F, H′, W′) with
//
//	y[n,f,i,j] = b[f] + Σ_{c,u,v} W[f, c,u,v] · x[n, c, S·i+u−P, S·j+v−P],
//
// u, v < K, where S is Stride, P is Pad (x is zero outside its bounds) and
//
//	H′ = ⌊(H + 2P − K) / S⌋ + 1,  W′ = ⌊(W + 2P − K) / S⌋ + 1.
//
// W is stored as an (F, C·K·K) matrix, row f holding filter f in (c, u, v)
// order, and B has shape (F); B is nil for a layer built with NoBias.
//
// Forward multiplies each sample's im2col matrix X_n of shape
// (H′W′, C·K·K), one row per output pixel, by Wᵀ with the packed f64
// kernel. X_n is never written out: the kernel reads entry (p, q) from the
// zero-padded sample at a window offset plus a tap offset
// (f64.GemmGather). The adjoints are products of the same matrices:
//
//	W̄ += Σ_n Ȳ_n · X_n,   X̄_n = Ȳ_nᵀ · W  (scattered back by col2im),
//
// where Ȳ_n is the (F, H′W′) adjoint of sample n. Samples run in parallel;
// W̄ and b̄ are summed in fixed chunks of samples and then across chunks in
// order, so results do not depend on GOMAXPROCS.
//
// Followed by a ReLU and a MaxPool2D in a Sequential, the convolution runs
// fused with them (see fused.go).
type Conv2D struct {
	W, B                           *ad.Param
	InC, OutC, Kernel, Stride, Pad int
}

// NewConv2D returns a convolution from inC to outC channels with square
// kernel × kernel filters, the given stride and zero padding, weights drawn
// from init (fan-in inC·kernel², fan-out outC·kernel²) and a zero bias. Its
// parameters are named name+".W" and name+".b".
func NewConv2D(rng *rand.Rand, name string, inC, outC, kernel, stride, pad int, init Init, opts ...Option) (*Conv2D, error) {
	switch {
	case inC < 1:
		return nil, fmt.Errorf("nn: NewConv2D %q: input channels %d must be >= 1", name, inC)
	case outC < 1:
		return nil, fmt.Errorf("nn: NewConv2D %q: output channels %d must be >= 1", name, outC)
	case kernel < 1:
		return nil, fmt.Errorf("nn: NewConv2D %q: kernel %d must be >= 1", name, kernel)
	case stride < 1:
		return nil, fmt.Errorf("nn: NewConv2D %q: stride %d must be >= 1", name, stride)
	case pad < 0:
		return nil, fmt.Errorf("nn: NewConv2D %q: padding %d must be >= 0", name, pad)
	}
	kk := inC * kernel * kernel
	w := ad.Zeros(outC, kk)
	if err := init.Fill(rng, w.Data, kk, outC*kernel*kernel); err != nil {
		return nil, fmt.Errorf("nn: NewConv2D %q: %w", name, err)
	}
	c := &Conv2D{W: ad.NewParam(name+".W", w), InC: inC, OutC: outC, Kernel: kernel, Stride: stride, Pad: pad}
	if !buildOptions(opts).noBias {
		c.B = ad.NewParam(name+".b", ad.Zeros(outC))
	}
	return c, nil
}

// Params returns W and, unless the layer has no bias, B.
func (c *Conv2D) Params() []*ad.Param {
	if c.B == nil {
		return []*ad.Param{c.W}
	}
	return []*ad.Param{c.W, c.B}
}

// OutSize returns the output height and width for an h×w input, or an
// error when the kernel does not fit the padded input.
func (c *Conv2D) OutSize(h, w int) (int, int, error) {
	if c.Kernel < 1 || c.Stride < 1 || c.Pad < 0 {
		return 0, 0, fmt.Errorf("nn: Conv2D: invalid kernel %d, stride %d or padding %d", c.Kernel, c.Stride, c.Pad)
	}
	if h < 0 || w < 0 || h+2*c.Pad < c.Kernel || w+2*c.Pad < c.Kernel {
		return 0, 0, fmt.Errorf("nn: Conv2D: kernel %d does not fit input %d×%d with padding %d", c.Kernel, h, w, c.Pad)
	}
	return (h+2*c.Pad-c.Kernel)/c.Stride + 1, (w+2*c.Pad-c.Kernel)/c.Stride + 1, nil
}

// convGeom is the geometry of one convolution call.
type convGeom struct {
	n, c, h, w     int // input
	f, ho, wo      int // output
	k, stride, pad int
}

func (g *convGeom) pix() int  { return g.ho * g.wo }
func (g *convGeom) cols() int { return g.c * g.k * g.k }

// Forward convolves x of shape (N, InC, H, W).
func (c *Conv2D) Forward(t *ad.Tape, x *ad.Var) *ad.Var {
	if !ready(t, x) {
		return dead(t)
	}
	if err := c.valid(); err != nil {
		return fail(t, "Conv2D: %v", err)
	}
	sh := x.Shape()
	if len(sh) != 4 || sh[1] != c.InC {
		return fail(t, "Conv2D: want input shape (N, %d, H, W), got %v", c.InC, sh)
	}
	ho, wo, err := c.OutSize(sh[2], sh[3])
	if err != nil {
		t.Fail(err)
		return dead(t)
	}
	g := convGeom{n: sh[0], c: sh[1], h: sh[2], w: sh[3], f: c.OutC, ho: ho, wo: wo, k: c.Kernel, stride: c.Stride, pad: c.Pad}
	var b *ad.Var
	if c.B != nil {
		b = t.Param(c.B)
	}
	return conv2d(t, &g, x, t.Param(c.W), b)
}

// conv2d records the convolution of x with filters w (F, C·K·K) and the
// optional bias b (F) of geometry g, whose shapes the caller has checked.
func conv2d(t *ad.Tape, g *convGeom, x, w, b *ad.Var) *ad.Var {
	ins := []*ad.Var{x, w}
	var bias []float64
	if b != nil {
		ins = append(ins, b)
		bias = b.Value()
	}
	wv, xv := w.Value(), x.Value()
	y := t.AllocRaw(g.n * g.f * g.pix()) // convForward writes every entry
	convForward(g, xv, wv, bias, y)
	return t.Custom([]int{g.n, g.f, g.ho, g.wo}, y, ins, func(gy []float64, gIn [][]float64) {
		var gb []float64
		if len(gIn) > 2 {
			gb = gIn[2]
		}
		convBackward(t, g, xv, wv, gy, gIn[0], gIn[1], gb)
	})
}

// valid checks the layer's fields, which callers may have set by hand.
func (c *Conv2D) valid() error {
	if c.InC < 1 || c.OutC < 1 || c.Kernel < 1 || c.Stride < 1 || c.Pad < 0 {
		return fmt.Errorf("invalid layer: channels %d→%d, kernel %d, stride %d, padding %d", c.InC, c.OutC, c.Kernel, c.Stride, c.Pad)
	}
	if c.W == nil || len(c.W.Value.Data) != c.OutC*c.InC*c.Kernel*c.Kernel {
		return fmt.Errorf("weights must have shape (%d, %d)", c.OutC, c.InC*c.Kernel*c.Kernel)
	}
	if c.B != nil && len(c.B.Value.Data) != c.OutC {
		return fmt.Errorf("bias must have shape (%d)", c.OutC)
	}
	return nil
}

// convScratch is one goroutine's working memory.
type convScratch struct {
	cols, tmp []float64
	xpad      []float64 // a sample with its zero border, for im2col
	packed    *f64.Packed

	// For the fused convolution and pooling (fused.go): the running
	// window maxima and their rows, and the sparse adjoint by filter and
	// by pixel.
	best, at, coef, byPixCoef   []float64
	pix, start, byPix, pixStart []int
}

var (
	convPool   sync.Pool
	packedPool = sync.Pool{New: func() any { return new(f64.Packed) }}
)

func getScratch(cols, tmp int) *convScratch {
	s, _ := convPool.Get().(*convScratch)
	if s == nil {
		s = new(convScratch)
	}
	s.cols = growTo(s.cols, cols)
	s.tmp = growTo(s.tmp, tmp)
	return s
}

func growTo(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}

func convForward(g *convGeom, x, w, bias, y []float64) {
	np, nc := g.pix(), g.cols()
	wt := packedPool.Get().(*f64.Packed)
	wt = f64.PackTransTo(wt, w, nc, g.f) // Wᵀ, (C·K·K, F)
	defer packedPool.Put(wt)
	rows, offs := g.gatherTables()
	scratch := make([]*convScratch, workers(g.n))
	for i := range scratch {
		scratch[i] = getScratch(0, np*g.f)
		scratch[i].xpad = growTo(scratch[i].xpad, g.padSize())
	}
	parallelFor(len(scratch), g.n, func(wk, n int) {
		s := scratch[wk]
		g.padInto(x[n*g.c*g.h*g.w:(n+1)*g.c*g.h*g.w], s.xpad)
		f64.GemmGather(s.xpad, rows, offs, wt, s.tmp) // X_n·Wᵀ, (H′W′, F)
		yn := y[n*g.f*np : (n+1)*g.f*np]
		f64.Transpose(yn, s.tmp, np, g.f)
		for f, b := range bias {
			row := yn[f*np : (f+1)*np]
			for i := range row {
				row[i] += b
			}
		}
	})
	for _, s := range scratch {
		convPool.Put(s)
	}
}

// convChunks bounds the number of partial sums of W̄ kept in backward.
const convChunks = 16

func convBackward(t *ad.Tape, g *convGeom, x, w, gy, gx, gw, gb []float64) {
	np, nc := g.pix(), g.cols()
	if gb != nil {
		// b̄[f] = Σ_n Σ_pixels ȳ[n,f,·], summed in sample order.
		for n := range g.n {
			for f := range g.f {
				s := 0.0
				for _, v := range gy[(n*g.f+f)*np : (n*g.f+f+1)*np] {
					s += v
				}
				gb[f] += s
			}
		}
	}
	if gx == nil && gw == nil {
		return
	}
	var wp *f64.Packed
	if gx != nil {
		wp = packedPool.Get().(*f64.Packed)
		wp = f64.PackTo(wp, w, g.f, nc) // W, (F, C·K·K)
		defer packedPool.Put(wp)
	}
	size, count := chunks(g.n, convChunks)
	var partial []float64
	if gw != nil {
		partial = t.Alloc(count * g.f * nc)
	}
	rows, offs := g.gatherTables()
	scratch := make([]*convScratch, workers(count))
	for i := range scratch {
		scratch[i] = getScratch(np*nc, np*g.f)
		scratch[i].xpad = growTo(scratch[i].xpad, g.padSize())
	}
	xs := g.c * g.h * g.w
	parallelFor(len(scratch), count, func(wk, q int) {
		s := scratch[wk]
		for n := q * size; n < min((q+1)*size, g.n); n++ {
			gyn := gy[n*g.f*np : (n+1)*g.f*np] // (F, H′W′)
			if gw != nil {
				// W̄ += Ȳ_n · X_n
				g.padInto(x[n*xs:(n+1)*xs], s.xpad)
				im2col(s.xpad, rows, offs, s.cols)
				s.packed = f64.PackTo(s.packed, s.cols, np, nc)
				f64.GemmAdd(g.f, gyn, s.packed, partial[q*g.f*nc:(q+1)*g.f*nc])
			}
			if gx != nil {
				// X̄_n = Ȳ_nᵀ · W, then scatter back.
				f64.Transpose(s.tmp, gyn, g.f, np)
				f64.Gemm(np, s.tmp, wp, s.cols)
				col2im(g, s.cols, gx[n*xs:(n+1)*xs])
			}
		}
	})
	for _, s := range scratch {
		convPool.Put(s)
	}
	for q := range count {
		f64.Axpy(1, partial[q*g.f*nc:(q+1)*g.f*nc], gw)
	}
}

// padSize returns the length of a zero-padded copy of one sample,
// (C, H+2P, W+2P).
func (g *convGeom) padSize() int { return g.c * (g.h + 2*g.pad) * (g.w + 2*g.pad) }

// padInto writes x (C, H, W) into xp with a zero border of width P.
func (g *convGeom) padInto(x, xp []float64) {
	hp, wp := g.h+2*g.pad, g.w+2*g.pad
	xp = xp[:g.c*hp*wp]
	if g.pad > 0 {
		clear(xp)
	}
	for c := range g.c {
		for i := range g.h {
			copy(xp[(c*hp+i+g.pad)*wp+g.pad:], x[(c*g.h+i)*g.w:(c*g.h+i+1)*g.w])
		}
	}
}

// gatherTables returns where the im2col matrix of a padded sample xp reads
// from: entry (p, q) of the matrix is xp[rows[p] + offs[q]], rows[p] being
// the corner of output pixel p's window and offs[q] the place of tap
// q = (c, u, v) within a window.
func (g *convGeom) gatherTables() (rows, offs []int) {
	hp, wp := g.h+2*g.pad, g.w+2*g.pad
	rows = make([]int, 0, g.pix())
	for oi := range g.ho {
		for oj := range g.wo {
			rows = append(rows, oi*g.stride*wp+oj*g.stride)
		}
	}
	offs = make([]int, 0, g.cols())
	for c := range g.c {
		for u := range g.k {
			for v := range g.k {
				offs = append(offs, (c*hp+u)*wp+v)
			}
		}
	}
	return rows, offs
}

// im2col writes the (H′W′, C·K·K) patch matrix of the padded sample xp
// (see padInto and gatherTables).
func im2col(xp []float64, rows, offs []int, cols []float64) {
	nc := len(offs)
	for p, r := range rows {
		row := cols[p*nc : (p+1)*nc]
		for q, o := range offs {
			row[q] = xp[r+o]
		}
	}
}

// col2im adds the patch-matrix adjoint cols back into the adjoint gx
// (C, H, W) of one sample, the transpose of im2col.
func col2im(g *convGeom, cols, gx []float64) {
	nc := g.cols()
	for p := range g.pix() {
		col2imPixel(g, p, cols[p*nc:(p+1)*nc], gx)
	}
}

// col2imPixel adds row, the adjoint of output pixel p's patch, into the
// sample adjoint gx (C, H, W).
func col2imPixel(g *convGeom, p int, row, gx []float64) {
	k := g.k
	oi, oj := p/g.wo, p%g.wo
	j0 := oj*g.stride - g.pad
	for c := range g.c {
		plane := gx[c*g.h*g.w : (c+1)*g.h*g.w]
		for u := range k {
			ii := oi*g.stride - g.pad + u
			if ii < 0 || ii >= g.h {
				continue
			}
			src := row[(c*k+u)*k : (c*k+u+1)*k]
			dst := plane[ii*g.w : (ii+1)*g.w]
			for v, d := range src {
				if jj := j0 + v; jj >= 0 && jj < g.w {
					dst[jj] += d
				}
			}
		}
	}
}
