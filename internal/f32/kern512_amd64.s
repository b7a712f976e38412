#include "textflag.h"

// AVX-512 kernel: the 6×16 tile of kern6x16 widened to two adjacent
// panels, thirty-two columns, one 16-lane register per row and panel.
// Every entry is the same chain of float32 fused multiply-adds over
// p = 0, 1, … as in kern6x16, one lane of a wider instruction, and is
// converted and stored (or added) the same way, so the bits are those of
// the AVX2 kernel.

// KERN6X32Z is the loop: for p < k (CX) it adds A[r][p]·B[p][0:32] to
// the running sums of rows r < 6 (Z0 … Z11: Z(2r) the first panel,
// Z(2r+1) the second), A's rows at SI, R10 … R14, the panels at DX, BX.
#define KERN6X32Z(label) \
label:                                  \
	VMOVUPS      (DX), Z12              \
	VMOVUPS      (BX), Z13              \
	VBROADCASTSS (SI)(AX*4), Z14        \
	VBROADCASTSS (R10)(AX*4), Z15       \
	VFMADD231PS  Z12, Z14, Z0           \
	VFMADD231PS  Z13, Z14, Z1           \
	VFMADD231PS  Z12, Z15, Z2           \
	VFMADD231PS  Z13, Z15, Z3           \
	VBROADCASTSS (R11)(AX*4), Z14       \
	VBROADCASTSS (R12)(AX*4), Z15       \
	VFMADD231PS  Z12, Z14, Z4           \
	VFMADD231PS  Z13, Z14, Z5           \
	VFMADD231PS  Z12, Z15, Z6           \
	VFMADD231PS  Z13, Z15, Z7           \
	VBROADCASTSS (R13)(AX*4), Z14       \
	VBROADCASTSS (R14)(AX*4), Z15       \
	VFMADD231PS  Z12, Z14, Z8           \
	VFMADD231PS  Z13, Z14, Z9           \
	VFMADD231PS  Z12, Z15, Z10          \
	VFMADD231PS  Z13, Z15, Z11          \
	ADDQ         $64, DX                \
	ADDQ         $64, BX                \
	INCQ         AX                     \
	CMPQ         AX, CX                 \
	JL           label

// CVT16 converts the sixteen float32 sums in z (low half y) to float64
// in Z12 (lanes 0-7) and Z13 (lanes 8-15).
#define CVT16(z, y) \
	VCVTPS2PD     y, Z12      \
	VEXTRACTF64X4 $1, z, Y13  \
	VCVTPS2PD     Y13, Z13

// STORE32 stores a row's 32 sums (z0, z1) as float64 at DI and moves DI
// on by a row (R9 bytes).
#define STORE32(z0, y0, z1, y1) \
	CVT16(z0, y0)             \
	VMOVUPD Z12, (DI)         \
	VMOVUPD Z13, 64(DI)       \
	CVT16(z1, y1)             \
	VMOVUPD Z12, 128(DI)      \
	VMOVUPD Z13, 192(DI)      \
	ADDQ    R9, DI

// ADD32 is STORE32 adding the converted sums to the float64 values at DI.
#define ADD32(z0, y0, z1, y1) \
	CVT16(z0, y0)             \
	VADDPD  (DI), Z12, Z12    \
	VADDPD  64(DI), Z13, Z13  \
	VMOVUPD Z12, (DI)         \
	VMOVUPD Z13, 64(DI)       \
	CVT16(z1, y1)             \
	VADDPD  128(DI), Z12, Z12 \
	VADDPD  192(DI), Z13, Z13 \
	VMOVUPD Z12, 128(DI)      \
	VMOVUPD Z13, 192(DI)      \
	ADDQ    R9, DI

// ARGS32 loads k into CX, the six rows of A into SI, R10 … R14, the
// panels into DX and BX (ldb float32 apart), the tile into DI with its
// row stride in R9 (bytes), sets AX = 0 and clears the sums.
#define ARGS32 \
	MOVQ   k+0(FP), CX          \
	MOVQ   a+8(FP), SI          \
	MOVQ   lda+16(FP), R8       \
	SHLQ   $2, R8               \
	MOVQ   b+24(FP), DX         \
	MOVQ   ldb+32(FP), BX       \
	LEAQ   (DX)(BX*4), BX       \
	MOVQ   c+40(FP), DI         \
	MOVQ   ldc+48(FP), R9       \
	SHLQ   $3, R9               \
	LEAQ   (SI)(R8*1), R10      \
	LEAQ   (R10)(R8*1), R11     \
	LEAQ   (R11)(R8*1), R12     \
	LEAQ   (R12)(R8*1), R13     \
	LEAQ   (R13)(R8*1), R14     \
	XORQ   AX, AX               \
	VPXORD Z0, Z0, Z0           \
	VPXORD Z1, Z1, Z1           \
	VPXORD Z2, Z2, Z2           \
	VPXORD Z3, Z3, Z3           \
	VPXORD Z4, Z4, Z4           \
	VPXORD Z5, Z5, Z5           \
	VPXORD Z6, Z6, Z6           \
	VPXORD Z7, Z7, Z7           \
	VPXORD Z8, Z8, Z8           \
	VPXORD Z9, Z9, Z9           \
	VPXORD Z10, Z10, Z10        \
	VPXORD Z11, Z11, Z11

// func kern6x32z(k int, a *float32, lda int, b *float32, ldb int, c *float64, ldc int)
TEXT ·kern6x32z(SB), NOSPLIT, $0-56
	ARGS32
	TESTQ CX, CX
	JE    k32_store
	KERN6X32Z(k32_loop)

k32_store:
	STORE32(Z0, Y0, Z1, Y1)
	STORE32(Z2, Y2, Z3, Y3)
	STORE32(Z4, Y4, Z5, Y5)
	STORE32(Z6, Y6, Z7, Y7)
	STORE32(Z8, Y8, Z9, Y9)
	STORE32(Z10, Y10, Z11, Y11)
	VZEROUPPER
	RET

// func kern6x32zacc(k int, a *float32, lda int, b *float32, ldb int, c *float64, ldc int)
TEXT ·kern6x32zacc(SB), NOSPLIT, $0-56
	ARGS32
	TESTQ CX, CX
	JE    k32acc_store
	KERN6X32Z(k32acc_loop)

k32acc_store:
	ADD32(Z0, Y0, Z1, Y1)
	ADD32(Z2, Y2, Z3, Y3)
	ADD32(Z4, Y4, Z5, Y5)
	ADD32(Z6, Y6, Z7, Y7)
	ADD32(Z8, Y8, Z9, Y9)
	ADD32(Z10, Y10, Z11, Y11)
	VZEROUPPER
	RET
