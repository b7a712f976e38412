#include "textflag.h"

// func axpyAsm(a float64, x, y []float64)
// y[i] += a*x[i] for i < len(x); len(y) == len(x).
TEXT ·axpyAsm(SB), NOSPLIT, $0-56
	VBROADCASTSD a+0(FP), Y0
	MOVQ x_base+8(FP), SI
	MOVQ x_len+16(FP), CX
	MOVQ y_base+32(FP), DI
	XORQ AX, AX
	MOVQ CX, BX
	ANDQ $-16, BX
	JE   axpy_tail4

axpy_loop16:
	VMOVUPD     (DI)(AX*8), Y1
	VMOVUPD     32(DI)(AX*8), Y2
	VMOVUPD     64(DI)(AX*8), Y3
	VMOVUPD     96(DI)(AX*8), Y4
	VFMADD231PD (SI)(AX*8), Y0, Y1
	VFMADD231PD 32(SI)(AX*8), Y0, Y2
	VFMADD231PD 64(SI)(AX*8), Y0, Y3
	VFMADD231PD 96(SI)(AX*8), Y0, Y4
	VMOVUPD     Y1, (DI)(AX*8)
	VMOVUPD     Y2, 32(DI)(AX*8)
	VMOVUPD     Y3, 64(DI)(AX*8)
	VMOVUPD     Y4, 96(DI)(AX*8)
	ADDQ        $16, AX
	CMPQ        AX, BX
	JL          axpy_loop16

axpy_tail4:
	MOVQ CX, BX
	ANDQ $-4, BX

axpy_loop4:
	CMPQ        AX, BX
	JGE         axpy_tail1
	VMOVUPD     (DI)(AX*8), Y1
	VFMADD231PD (SI)(AX*8), Y0, Y1
	VMOVUPD     Y1, (DI)(AX*8)
	ADDQ        $4, AX
	JMP         axpy_loop4

axpy_tail1:
	CMPQ        AX, CX
	JGE         axpy_done
	VMOVSD      (DI)(AX*8), X1
	VFMADD231SD (SI)(AX*8), X0, X1
	VMOVSD      X1, (DI)(AX*8)
	INCQ        AX
	JMP         axpy_tail1

axpy_done:
	VZEROUPPER
	RET

// func dotAsm(x, y []float64) float64
TEXT ·dotAsm(SB), NOSPLIT, $0-56
	MOVQ   x_base+0(FP), SI
	MOVQ   x_len+8(FP), CX
	MOVQ   y_base+24(FP), DI
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	XORQ   AX, AX
	MOVQ   CX, BX
	ANDQ   $-16, BX
	JE     dot_tail4

dot_loop16:
	VMOVUPD     (SI)(AX*8), Y4
	VMOVUPD     32(SI)(AX*8), Y5
	VMOVUPD     64(SI)(AX*8), Y6
	VMOVUPD     96(SI)(AX*8), Y7
	VFMADD231PD (DI)(AX*8), Y4, Y0
	VFMADD231PD 32(DI)(AX*8), Y5, Y1
	VFMADD231PD 64(DI)(AX*8), Y6, Y2
	VFMADD231PD 96(DI)(AX*8), Y7, Y3
	ADDQ        $16, AX
	CMPQ        AX, BX
	JL          dot_loop16

dot_tail4:
	MOVQ CX, BX
	ANDQ $-4, BX

dot_loop4:
	CMPQ        AX, BX
	JGE         dot_reduce
	VMOVUPD     (SI)(AX*8), Y4
	VFMADD231PD (DI)(AX*8), Y4, Y0
	ADDQ        $4, AX
	JMP         dot_loop4

dot_reduce:
	VADDPD       Y1, Y0, Y0
	VADDPD       Y3, Y2, Y2
	VADDPD       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPD       X1, X0, X0
	VHADDPD      X0, X0, X0

dot_tail1:
	CMPQ        AX, CX
	JGE         dot_done
	VMOVSD      (SI)(AX*8), X4
	VFMADD231SD (DI)(AX*8), X4, X0
	INCQ        AX
	JMP         dot_tail1

dot_done:
	VMOVSD X0, ret+48(FP)
	VZEROUPPER
	RET

// func kern4x8(k int, a *float64, lda int, b *float64, c *float64, ldc int)
// C[r][0:8] = sum over p < k of A[r][p] * B[p][0:8] for r < 4, where A's
// rows start at a with stride lda and B is a packed k×8 panel at b.
TEXT ·kern4x8(SB), NOSPLIT, $0-48
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), R8
	SHLQ $3, R8
	MOVQ b+24(FP), DX
	MOVQ c+32(FP), DI
	MOVQ ldc+40(FP), R9
	SHLQ $3, R9
	LEAQ (SI)(R8*1), R10
	LEAQ (R10)(R8*1), R11
	LEAQ (R11)(R8*1), R12

	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
	XORQ   AX, AX
	TESTQ  CX, CX
	JE     kern_store

kern_loop:
	VMOVUPD      (DX), Y8
	VMOVUPD      32(DX), Y9
	VBROADCASTSD (SI)(AX*8), Y10
	VBROADCASTSD (R10)(AX*8), Y11
	VFMADD231PD  Y8, Y10, Y0
	VFMADD231PD  Y9, Y10, Y1
	VBROADCASTSD (R11)(AX*8), Y12
	VFMADD231PD  Y8, Y11, Y2
	VFMADD231PD  Y9, Y11, Y3
	VBROADCASTSD (R12)(AX*8), Y13
	VFMADD231PD  Y8, Y12, Y4
	VFMADD231PD  Y9, Y12, Y5
	VFMADD231PD  Y8, Y13, Y6
	VFMADD231PD  Y9, Y13, Y7
	ADDQ         $64, DX
	INCQ         AX
	CMPQ         AX, CX
	JL           kern_loop

kern_store:
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	ADDQ    R9, DI
	VMOVUPD Y2, (DI)
	VMOVUPD Y3, 32(DI)
	ADDQ    R9, DI
	VMOVUPD Y4, (DI)
	VMOVUPD Y5, 32(DI)
	ADDQ    R9, DI
	VMOVUPD Y6, (DI)
	VMOVUPD Y7, 32(DI)
	VZEROUPPER
	RET

// func axpy4Asm(n int, a *[4]float64, x0, x1, x2, x3, y *float64)
// y[i] += a[0]*x0[i] + a[1]*x1[i] + a[2]*x2[i] + a[3]*x3[i] for i < n, as
// four fused multiply-adds in that order (the same rounding as four
// successive axpyAsm calls).
TEXT ·axpy4Asm(SB), NOSPLIT, $0-56
	MOVQ         n+0(FP), CX
	MOVQ         a+8(FP), AX
	VBROADCASTSD (AX), Y0
	VBROADCASTSD 8(AX), Y1
	VBROADCASTSD 16(AX), Y2
	VBROADCASTSD 24(AX), Y3
	MOVQ         x0+16(FP), R8
	MOVQ         x1+24(FP), R9
	MOVQ         x2+32(FP), R10
	MOVQ         x3+40(FP), R11
	MOVQ         y+48(FP), DI
	XORQ         SI, SI
	MOVQ         CX, BX
	ANDQ         $-4, BX
	JE           a4_tail

a4_loop:
	VMOVUPD     (DI)(SI*8), Y4
	VFMADD231PD (R8)(SI*8), Y0, Y4
	VFMADD231PD (R9)(SI*8), Y1, Y4
	VFMADD231PD (R10)(SI*8), Y2, Y4
	VFMADD231PD (R11)(SI*8), Y3, Y4
	VMOVUPD     Y4, (DI)(SI*8)
	ADDQ        $4, SI
	CMPQ        SI, BX
	JL          a4_loop

a4_tail:
	CMPQ        SI, CX
	JGE         a4_done
	VMOVSD      (DI)(SI*8), X4
	VFMADD231SD (R8)(SI*8), X0, X4
	VFMADD231SD (R9)(SI*8), X1, X4
	VFMADD231SD (R10)(SI*8), X2, X4
	VFMADD231SD (R11)(SI*8), X3, X4
	VMOVSD      X4, (DI)(SI*8)
	INCQ        SI
	JMP         a4_tail

a4_done:
	VZEROUPPER
	RET

// func dot4Asm(n int, x, y0, y1, y2, y3 *float64, out *[4]float64)
// out[j] = sum over i < n of x[i]*yj[i], for j < 4.
TEXT ·dot4Asm(SB), NOSPLIT, $0-56
	MOVQ   n+0(FP), CX
	MOVQ   x+8(FP), DX
	MOVQ   y0+16(FP), R8
	MOVQ   y1+24(FP), R9
	MOVQ   y2+32(FP), R10
	MOVQ   y3+40(FP), R11
	MOVQ   out+48(FP), DI
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
	XORQ   SI, SI
	MOVQ   CX, BX
	ANDQ   $-8, BX
	JE     d4_tail4

d4_loop8:
	VMOVUPD     (DX)(SI*8), Y8
	VMOVUPD     32(DX)(SI*8), Y9
	VFMADD231PD (R8)(SI*8), Y8, Y0
	VFMADD231PD 32(R8)(SI*8), Y9, Y4
	VFMADD231PD (R9)(SI*8), Y8, Y1
	VFMADD231PD 32(R9)(SI*8), Y9, Y5
	VFMADD231PD (R10)(SI*8), Y8, Y2
	VFMADD231PD 32(R10)(SI*8), Y9, Y6
	VFMADD231PD (R11)(SI*8), Y8, Y3
	VFMADD231PD 32(R11)(SI*8), Y9, Y7
	ADDQ        $8, SI
	CMPQ        SI, BX
	JL          d4_loop8

d4_tail4:
	MOVQ        CX, BX
	ANDQ        $-4, BX
	CMPQ        SI, BX
	JGE         d4_reduce
	VMOVUPD     (DX)(SI*8), Y8
	VFMADD231PD (R8)(SI*8), Y8, Y0
	VFMADD231PD (R9)(SI*8), Y8, Y1
	VFMADD231PD (R10)(SI*8), Y8, Y2
	VFMADD231PD (R11)(SI*8), Y8, Y3
	ADDQ        $4, SI

d4_reduce:
	VADDPD       Y4, Y0, Y0
	VADDPD       Y5, Y1, Y1
	VADDPD       Y6, Y2, Y2
	VADDPD       Y7, Y3, Y3
	VEXTRACTF128 $1, Y0, X8
	VADDPD       X8, X0, X0
	VHADDPD      X0, X0, X0
	VEXTRACTF128 $1, Y1, X8
	VADDPD       X8, X1, X1
	VHADDPD      X1, X1, X1
	VEXTRACTF128 $1, Y2, X8
	VADDPD       X8, X2, X2
	VHADDPD      X2, X2, X2
	VEXTRACTF128 $1, Y3, X8
	VADDPD       X8, X3, X3
	VHADDPD      X3, X3, X3

d4_tail1:
	CMPQ        SI, CX
	JGE         d4_done
	VMOVSD      (DX)(SI*8), X8
	VFMADD231SD (R8)(SI*8), X8, X0
	VFMADD231SD (R9)(SI*8), X8, X1
	VFMADD231SD (R10)(SI*8), X8, X2
	VFMADD231SD (R11)(SI*8), X8, X3
	INCQ        SI
	JMP         d4_tail1

d4_done:
	VMOVSD X0, (DI)
	VMOVSD X1, 8(DI)
	VMOVSD X2, 16(DI)
	VMOVSD X3, 24(DI)
	VZEROUPPER
	RET

// func kern4x8acc(k int, a *float64, lda int, b *float64, c *float64, ldc int)
// C[r][0:8] += sum over p < k of A[r][p] * B[p][0:8] for r < 4: kern4x8 with
// the running sums started from C instead of zero.
TEXT ·kern4x8acc(SB), NOSPLIT, $0-48
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), R8
	SHLQ $3, R8
	MOVQ b+24(FP), DX
	MOVQ c+32(FP), DI
	MOVQ ldc+40(FP), R9
	SHLQ $3, R9
	LEAQ (SI)(R8*1), R10
	LEAQ (R10)(R8*1), R11
	LEAQ (R11)(R8*1), R12

	MOVQ    DI, R13
	VMOVUPD (R13), Y0
	VMOVUPD 32(R13), Y1
	ADDQ    R9, R13
	VMOVUPD (R13), Y2
	VMOVUPD 32(R13), Y3
	ADDQ    R9, R13
	VMOVUPD (R13), Y4
	VMOVUPD 32(R13), Y5
	ADDQ    R9, R13
	VMOVUPD (R13), Y6
	VMOVUPD 32(R13), Y7
	XORQ    AX, AX
	TESTQ   CX, CX
	JE      kacc_store

kacc_loop:
	VMOVUPD      (DX), Y8
	VMOVUPD      32(DX), Y9
	VBROADCASTSD (SI)(AX*8), Y10
	VBROADCASTSD (R10)(AX*8), Y11
	VFMADD231PD  Y8, Y10, Y0
	VFMADD231PD  Y9, Y10, Y1
	VBROADCASTSD (R11)(AX*8), Y12
	VFMADD231PD  Y8, Y11, Y2
	VFMADD231PD  Y9, Y11, Y3
	VBROADCASTSD (R12)(AX*8), Y13
	VFMADD231PD  Y8, Y12, Y4
	VFMADD231PD  Y9, Y12, Y5
	VFMADD231PD  Y8, Y13, Y6
	VFMADD231PD  Y9, Y13, Y7
	ADDQ         $64, DX
	INCQ         AX
	CMPQ         AX, CX
	JL           kacc_loop

kacc_store:
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	ADDQ    R9, DI
	VMOVUPD Y2, (DI)
	VMOVUPD Y3, 32(DI)
	ADDQ    R9, DI
	VMOVUPD Y4, (DI)
	VMOVUPD Y5, 32(DI)
	ADDQ    R9, DI
	VMOVUPD Y6, (DI)
	VMOVUPD Y7, 32(DI)
	VZEROUPPER
	RET

// func maxArg4Asm(n int, p *[4]float64, x0, x1, x2, x3, best, at *float64)
// For i < n and j = 0, 1, 2, 3 in order: if xj[i] > best[i] (ordered, so
// a NaN never wins), best[i] = xj[i] and at[i] = p[j]. Branch-free: one
// compare and two blends per row.
TEXT ·maxArg4Asm(SB), NOSPLIT, $0-64
	MOVQ         n+0(FP), CX
	MOVQ         p+8(FP), AX
	VBROADCASTSD (AX), Y0
	VBROADCASTSD 8(AX), Y1
	VBROADCASTSD 16(AX), Y2
	VBROADCASTSD 24(AX), Y3
	MOVQ         x0+16(FP), R8
	MOVQ         x1+24(FP), R9
	MOVQ         x2+32(FP), R10
	MOVQ         x3+40(FP), R11
	MOVQ         best+48(FP), DI
	MOVQ         at+56(FP), DX
	XORQ         SI, SI
	MOVQ         CX, BX
	ANDQ         $-4, BX
	JE           m4_tail

m4_loop:
	VMOVUPD   (DI)(SI*8), Y4
	VMOVUPD   (DX)(SI*8), Y5
	VMOVUPD   (R8)(SI*8), Y6
	VCMPPD    $0x1e, Y4, Y6, Y7
	VBLENDVPD Y7, Y6, Y4, Y4
	VBLENDVPD Y7, Y0, Y5, Y5
	VMOVUPD   (R9)(SI*8), Y6
	VCMPPD    $0x1e, Y4, Y6, Y7
	VBLENDVPD Y7, Y6, Y4, Y4
	VBLENDVPD Y7, Y1, Y5, Y5
	VMOVUPD   (R10)(SI*8), Y6
	VCMPPD    $0x1e, Y4, Y6, Y7
	VBLENDVPD Y7, Y6, Y4, Y4
	VBLENDVPD Y7, Y2, Y5, Y5
	VMOVUPD   (R11)(SI*8), Y6
	VCMPPD    $0x1e, Y4, Y6, Y7
	VBLENDVPD Y7, Y6, Y4, Y4
	VBLENDVPD Y7, Y3, Y5, Y5
	VMOVUPD   Y4, (DI)(SI*8)
	VMOVUPD   Y5, (DX)(SI*8)
	ADDQ      $4, SI
	CMPQ      SI, BX
	JL        m4_loop

m4_tail:
	CMPQ      SI, CX
	JGE       m4_done
	VMOVSD    (DI)(SI*8), X4
	VMOVSD    (DX)(SI*8), X5
	VMOVSD    (R8)(SI*8), X6
	VCMPSD    $0x1e, X4, X6, X7
	VBLENDVPD X7, X6, X4, X4
	VBLENDVPD X7, X0, X5, X5
	VMOVSD    (R9)(SI*8), X6
	VCMPSD    $0x1e, X4, X6, X7
	VBLENDVPD X7, X6, X4, X4
	VBLENDVPD X7, X1, X5, X5
	VMOVSD    (R10)(SI*8), X6
	VCMPSD    $0x1e, X4, X6, X7
	VBLENDVPD X7, X6, X4, X4
	VBLENDVPD X7, X2, X5, X5
	VMOVSD    (R11)(SI*8), X6
	VCMPSD    $0x1e, X4, X6, X7
	VBLENDVPD X7, X6, X4, X4
	VBLENDVPD X7, X3, X5, X5
	VMOVSD    X4, (DI)(SI*8)
	VMOVSD    X5, (DX)(SI*8)
	INCQ      SI
	JMP       m4_tail

m4_done:
	VZEROUPPER
	RET

// func kern4x8off(k int, x *float64, rows *[4]int, off *int, b *float64, c *float64, ldc int)
// C[r][0:8] = sum over p < k of x[rows[r]+off[p]] * B[p][0:8] for r < 4,
// where B is a packed k×8 panel at b: kern4x8 with the rows of A gathered
// from x through a row base and a column offset table (an implicit im2col
// matrix). The sums run over p in order with fused multiply-adds, as in
// kern4x8.
TEXT ·kern4x8off(SB), NOSPLIT, $0-56
	MOVQ k+0(FP), CX
	MOVQ x+8(FP), SI
	MOVQ rows+16(FP), AX
	MOVQ (AX), R10
	MOVQ 8(AX), R11
	MOVQ 16(AX), R12
	MOVQ 24(AX), R13
	LEAQ (SI)(R10*8), R10
	LEAQ (SI)(R11*8), R11
	LEAQ (SI)(R12*8), R12
	LEAQ (SI)(R13*8), R13
	MOVQ off+24(FP), BX
	MOVQ b+32(FP), DX
	MOVQ c+40(FP), DI
	MOVQ ldc+48(FP), R9
	SHLQ $3, R9

	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
	XORQ   AX, AX
	TESTQ  CX, CX
	JE     koff_store

koff_loop:
	MOVQ         (BX)(AX*8), R8
	VMOVUPD      (DX), Y8
	VMOVUPD      32(DX), Y9
	VBROADCASTSD (R10)(R8*8), Y10
	VBROADCASTSD (R11)(R8*8), Y11
	VFMADD231PD  Y8, Y10, Y0
	VFMADD231PD  Y9, Y10, Y1
	VBROADCASTSD (R12)(R8*8), Y12
	VFMADD231PD  Y8, Y11, Y2
	VFMADD231PD  Y9, Y11, Y3
	VBROADCASTSD (R13)(R8*8), Y13
	VFMADD231PD  Y8, Y12, Y4
	VFMADD231PD  Y9, Y12, Y5
	VFMADD231PD  Y8, Y13, Y6
	VFMADD231PD  Y9, Y13, Y7
	ADDQ         $64, DX
	INCQ         AX
	CMPQ         AX, CX
	JL           koff_loop

koff_store:
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	ADDQ    R9, DI
	VMOVUPD Y2, (DI)
	VMOVUPD Y3, 32(DI)
	ADDQ    R9, DI
	VMOVUPD Y4, (DI)
	VMOVUPD Y5, 32(DI)
	ADDQ    R9, DI
	VMOVUPD Y6, (DI)
	VMOVUPD Y7, 32(DI)
	VZEROUPPER
	RET

// func kern4x8offacc(k int, x *float64, rows *[4]int, off *int, b *float64, c *float64, ldc int)
// kern4x8off, adding to the tile at c: the running sums start from its
// values, as in kern4x8acc.
TEXT ·kern4x8offacc(SB), NOSPLIT, $0-56
	MOVQ k+0(FP), CX
	MOVQ x+8(FP), SI
	MOVQ rows+16(FP), AX
	MOVQ (AX), R10
	MOVQ 8(AX), R11
	MOVQ 16(AX), R12
	MOVQ 24(AX), R13
	LEAQ (SI)(R10*8), R10
	LEAQ (SI)(R11*8), R11
	LEAQ (SI)(R12*8), R12
	LEAQ (SI)(R13*8), R13
	MOVQ off+24(FP), BX
	MOVQ b+32(FP), DX
	MOVQ c+40(FP), DI
	MOVQ ldc+48(FP), R9
	SHLQ $3, R9

	MOVQ    DI, R8
	VMOVUPD (R8), Y0
	VMOVUPD 32(R8), Y1
	ADDQ    R9, R8
	VMOVUPD (R8), Y2
	VMOVUPD 32(R8), Y3
	ADDQ    R9, R8
	VMOVUPD (R8), Y4
	VMOVUPD 32(R8), Y5
	ADDQ    R9, R8
	VMOVUPD (R8), Y6
	VMOVUPD 32(R8), Y7
	XORQ    AX, AX
	TESTQ   CX, CX
	JE      koffacc_store

koffacc_loop:
	MOVQ         (BX)(AX*8), R8
	VMOVUPD      (DX), Y8
	VMOVUPD      32(DX), Y9
	VBROADCASTSD (R10)(R8*8), Y10
	VBROADCASTSD (R11)(R8*8), Y11
	VFMADD231PD  Y8, Y10, Y0
	VFMADD231PD  Y9, Y10, Y1
	VBROADCASTSD (R12)(R8*8), Y12
	VFMADD231PD  Y8, Y11, Y2
	VFMADD231PD  Y9, Y11, Y3
	VBROADCASTSD (R13)(R8*8), Y13
	VFMADD231PD  Y8, Y12, Y4
	VFMADD231PD  Y9, Y12, Y5
	VFMADD231PD  Y8, Y13, Y6
	VFMADD231PD  Y9, Y13, Y7
	ADDQ         $64, DX
	INCQ         AX
	CMPQ         AX, CX
	JL           koffacc_loop

koffacc_store:
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	ADDQ    R9, DI
	VMOVUPD Y2, (DI)
	VMOVUPD Y3, 32(DI)
	ADDQ    R9, DI
	VMOVUPD Y4, (DI)
	VMOVUPD Y5, 32(DI)
	ADDQ    R9, DI
	VMOVUPD Y6, (DI)
	VMOVUPD Y7, 32(DI)
	VZEROUPPER
	RET
