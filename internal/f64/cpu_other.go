//go:build !amd64

package f64

const hasAsm = false

func axpyAsm(a float64, x, y []float64) { panic("f64: no assembly on this architecture") }
func dotAsm(x, y []float64) float64     { panic("f64: no assembly on this architecture") }
func kern4x8(k int, a *float64, lda int, b *float64, c *float64, ldc int) {
	panic("f64: no assembly on this architecture")
}

func kern4x8acc(k int, a *float64, lda int, b *float64, c *float64, ldc int) {
	panic("f64: no assembly on this architecture")
}

func axpy4Asm(n int, a *[4]float64, x0, x1, x2, x3, y *float64) {
	panic("f64: no assembly on this architecture")
}
func dot4Asm(n int, x, y0, y1, y2, y3 *float64, out *[4]float64) {
	panic("f64: no assembly on this architecture")
}

func maxArg4Asm(n int, p *[4]float64, x0, x1, x2, x3, best, at *float64) {
	panic("f64: no assembly on this architecture")
}

func kern4x8off(k int, x *float64, rows *[4]int, off *int, b *float64, c *float64, ldc int) {
	panic("f64: no assembly on this architecture")
}

func kern4x8offacc(k int, x *float64, rows *[4]int, off *int, b *float64, c *float64, ldc int) {
	panic("f64: no assembly on this architecture")
}

func adamAsm(n int, c *AdamCoef, x, grad, m, v *float64) {
	panic("f64: no assembly on this architecture")
}

func packRowsAsm(rows, np int, src *float64, lds int, dst *float64, ldp int) {
	panic("f64: no assembly on this architecture")
}

func packTrans8Asm(k4 int, src *float64, lds int, dst *float64) {
	panic("f64: no assembly on this architecture")
}

func transpose4Asm(nb int, src *float64, lds int, dst *float64, ldd int) {
	panic("f64: no assembly on this architecture")
}

func kern6x8(k int, a *float64, lda int, b *float64, c *float64, ldc int) {
	panic("f64: no assembly on this architecture")
}

func kern6x8acc(k int, a *float64, lda int, b *float64, c *float64, ldc int) {
	panic("f64: no assembly on this architecture")
}

func expAsm(n int, dst, x *float64) int {
	panic("f64: no assembly on this architecture")
}

func log1pAsm(n int, dst, x *float64) int {
	panic("f64: no assembly on this architecture")
}

func logAsm(n int, dst, x *float64) int {
	panic("f64: no assembly on this architecture")
}

func logisticGradAsm(n int, a float64, dst, x, e, y *float64) {
	panic("f64: no assembly on this architecture")
}

const hasAVX512 = false

func kern6x16z(k int, a *float64, lda int, b *float64, ldb int, c *float64, ldc int) {
	panic("f64: no assembly on this architecture")
}

func kern6x16zacc(k int, a *float64, lda int, b *float64, ldb int, c *float64, ldc int) {
	panic("f64: no assembly on this architecture")
}
