#include "textflag.h"

// AVX-512 kernels: the 6×8 tile of kern6x8 widened to two adjacent
// panels, sixteen columns, one 8-lane register per row and panel. Every
// entry is the same chain of fused multiply-adds over p = 0, 1, … as in
// kern6x8, one lane of a wider instruction, so the bits are those of the
// AVX2 kernels.

// KERN6X16Z is the loop: for p < k (CX) it adds A[r][p]·B[p][0:16] to the
// running sums of rows r < 6 (Z0 … Z11: Z(2r) the first panel, Z(2r+1)
// the second), A's rows at SI, R10 … R14, the panels at DX and BX.
#define KERN6X16Z(label) \
label:                                  \
	VMOVUPD      (DX), Z12              \
	VMOVUPD      (BX), Z13              \
	VBROADCASTSD (SI)(AX*8), Z14        \
	VBROADCASTSD (R10)(AX*8), Z15       \
	VFMADD231PD  Z12, Z14, Z0           \
	VFMADD231PD  Z13, Z14, Z1           \
	VFMADD231PD  Z12, Z15, Z2           \
	VFMADD231PD  Z13, Z15, Z3           \
	VBROADCASTSD (R11)(AX*8), Z14       \
	VBROADCASTSD (R12)(AX*8), Z15       \
	VFMADD231PD  Z12, Z14, Z4           \
	VFMADD231PD  Z13, Z14, Z5           \
	VFMADD231PD  Z12, Z15, Z6           \
	VFMADD231PD  Z13, Z15, Z7           \
	VBROADCASTSD (R13)(AX*8), Z14       \
	VBROADCASTSD (R14)(AX*8), Z15       \
	VFMADD231PD  Z12, Z14, Z8           \
	VFMADD231PD  Z13, Z14, Z9           \
	VFMADD231PD  Z12, Z15, Z10          \
	VFMADD231PD  Z13, Z15, Z11          \
	ADDQ         $64, DX                \
	ADDQ         $64, BX                \
	INCQ         AX                     \
	CMPQ         AX, CX                 \
	JL           label

// K16ROW moves a row of the tile between memory at DI and two registers.
#define K16LOAD(z0, z1) \
	VMOVUPD (DI), z0    \
	VMOVUPD 64(DI), z1  \
	ADDQ    R9, DI

#define K16STORE(z0, z1) \
	VMOVUPD z0, (DI)    \
	VMOVUPD z1, 64(DI)  \
	ADDQ    R9, DI

// K16ARGS loads the arguments: k in CX, the six rows of A in SI, R10 …
// R14, the panels in DX and BX (ldb float64 apart), the tile in DI with
// row stride R9 (bytes), and AX = 0.
#define K16ARGS \
	MOVQ k+0(FP), CX        \
	MOVQ a+8(FP), SI        \
	MOVQ lda+16(FP), R8     \
	SHLQ $3, R8             \
	MOVQ b+24(FP), DX       \
	MOVQ ldb+32(FP), BX     \
	LEAQ (DX)(BX*8), BX     \
	MOVQ c+40(FP), DI       \
	MOVQ ldc+48(FP), R9     \
	SHLQ $3, R9             \
	LEAQ (SI)(R8*1), R10    \
	LEAQ (R10)(R8*1), R11   \
	LEAQ (R11)(R8*1), R12   \
	LEAQ (R12)(R8*1), R13   \
	LEAQ (R13)(R8*1), R14   \
	XORQ AX, AX

// func kern6x16z(k int, a *float64, lda int, b *float64, ldb int, c *float64, ldc int)
// C[r][0:16] = sum over p < k of A[r][p]·B[p][0:16] for r < 6, columns
// 0-7 from the panel at b and 8-15 from the panel at b + ldb.
TEXT ·kern6x16z(SB), NOSPLIT, $0-56
	K16ARGS
	VPXORQ Z0, Z0, Z0
	VPXORQ Z1, Z1, Z1
	VPXORQ Z2, Z2, Z2
	VPXORQ Z3, Z3, Z3
	VPXORQ Z4, Z4, Z4
	VPXORQ Z5, Z5, Z5
	VPXORQ Z6, Z6, Z6
	VPXORQ Z7, Z7, Z7
	VPXORQ Z8, Z8, Z8
	VPXORQ Z9, Z9, Z9
	VPXORQ Z10, Z10, Z10
	VPXORQ Z11, Z11, Z11
	TESTQ  CX, CX
	JE     k16_store
	KERN6X16Z(k16_loop)

k16_store:
	MOVQ c+40(FP), DI
	K16STORE(Z0, Z1)
	K16STORE(Z2, Z3)
	K16STORE(Z4, Z5)
	K16STORE(Z6, Z7)
	K16STORE(Z8, Z9)
	K16STORE(Z10, Z11)
	VZEROUPPER
	RET

// func kern6x16zacc(k int, a *float64, lda int, b *float64, ldb int, c *float64, ldc int)
// kern6x16z with the running sums started from the tile at c.
TEXT ·kern6x16zacc(SB), NOSPLIT, $0-56
	K16ARGS
	K16LOAD(Z0, Z1)
	K16LOAD(Z2, Z3)
	K16LOAD(Z4, Z5)
	K16LOAD(Z6, Z7)
	K16LOAD(Z8, Z9)
	K16LOAD(Z10, Z11)
	TESTQ CX, CX
	JE    k16acc_store
	KERN6X16Z(k16acc_loop)

k16acc_store:
	MOVQ c+40(FP), DI
	K16STORE(Z0, Z1)
	K16STORE(Z2, Z3)
	K16STORE(Z4, Z5)
	K16STORE(Z6, Z7)
	K16STORE(Z8, Z9)
	K16STORE(Z10, Z11)
	VZEROUPPER
	RET
