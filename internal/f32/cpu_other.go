//go:build !amd64

package f32

const hasAsm = false

func kern6x16(k int, a *float32, lda int, b *float32, c *float64, ldc int) {
	panic("f32: no assembly on this architecture")
}

func kern6x16acc(k int, a *float32, lda int, b *float32, c *float64, ldc int) {
	panic("f32: no assembly on this architecture")
}

func cvtAsm(n int, src *float64, dst *float32) { panic("f32: no assembly on this architecture") }

func packPanelsAsm(k, nq int, src *float64, lds int, dst *float32, ldp int) {
	panic("f32: no assembly on this architecture")
}

func packTransAsm(k4, nq int, src *float64, lds int, dst *float32, ldp int) {
	panic("f32: no assembly on this architecture")
}

func packLeftTransAsm(m4, k4 int, src *float64, lds int, dst *float32, ldd int) {
	panic("f32: no assembly on this architecture")
}

const hasAVX512 = false

func kern6x32z(k int, a *float32, lda int, b *float32, ldb int, c *float64, ldc int) {
	panic("f32: no assembly on this architecture")
}

func kern6x32zacc(k int, a *float32, lda int, b *float32, ldb int, c *float64, ldc int) {
	panic("f32: no assembly on this architecture")
}
