#include "textflag.h"

// KERN6X8 is the loop of kern6x8 and kern6x8acc: for p < k (CX) it adds
// A[r][p]·B[p][0:8] to the running sums of rows r < 6 (Y0 … Y11, two
// registers a row), A's rows at SI, R10 … R14 and B's panel at DX. Twelve
// independent sums keep both FMA pipes busy through the FMA latency,
// which the eight of kern4x8 cover only just.
#define KERN6X8(label) \
label:                                  \
	VMOVUPD      (DX), Y12              \
	VMOVUPD      32(DX), Y13            \
	VBROADCASTSD (SI)(AX*8), Y14        \
	VBROADCASTSD (R10)(AX*8), Y15       \
	VFMADD231PD  Y12, Y14, Y0           \
	VFMADD231PD  Y13, Y14, Y1           \
	VFMADD231PD  Y12, Y15, Y2           \
	VFMADD231PD  Y13, Y15, Y3           \
	VBROADCASTSD (R11)(AX*8), Y14       \
	VBROADCASTSD (R12)(AX*8), Y15       \
	VFMADD231PD  Y12, Y14, Y4           \
	VFMADD231PD  Y13, Y14, Y5           \
	VFMADD231PD  Y12, Y15, Y6           \
	VFMADD231PD  Y13, Y15, Y7           \
	VBROADCASTSD (R13)(AX*8), Y14       \
	VBROADCASTSD (R14)(AX*8), Y15       \
	VFMADD231PD  Y12, Y14, Y8           \
	VFMADD231PD  Y13, Y14, Y9           \
	VFMADD231PD  Y12, Y15, Y10          \
	VFMADD231PD  Y13, Y15, Y11          \
	ADDQ         $64, DX                \
	INCQ         AX                     \
	CMPQ         AX, CX                 \
	JL           label

// KERN6X8STORE stores the sums Y0 … Y11 to the 6×8 tile at DI (row
// stride R9 bytes).
#define KERN6X8STORE \
	VMOVUPD Y0, (DI)    \
	VMOVUPD Y1, 32(DI)  \
	ADDQ    R9, DI      \
	VMOVUPD Y2, (DI)    \
	VMOVUPD Y3, 32(DI)  \
	ADDQ    R9, DI      \
	VMOVUPD Y4, (DI)    \
	VMOVUPD Y5, 32(DI)  \
	ADDQ    R9, DI      \
	VMOVUPD Y6, (DI)    \
	VMOVUPD Y7, 32(DI)  \
	ADDQ    R9, DI      \
	VMOVUPD Y8, (DI)    \
	VMOVUPD Y9, 32(DI)  \
	ADDQ    R9, DI      \
	VMOVUPD Y10, (DI)   \
	VMOVUPD Y11, 32(DI)

// KERN6X8ARGS loads the arguments of kern6x8 and kern6x8acc: k in CX, the
// six rows of A in SI, R10 … R14, the panel in DX, the tile in DI with
// row stride R9 (bytes), and AX = 0.
#define KERN6X8ARGS \
	MOVQ k+0(FP), CX        \
	MOVQ a+8(FP), SI        \
	MOVQ lda+16(FP), R8     \
	SHLQ $3, R8             \
	MOVQ b+24(FP), DX       \
	MOVQ c+32(FP), DI       \
	MOVQ ldc+40(FP), R9     \
	SHLQ $3, R9             \
	LEAQ (SI)(R8*1), R10    \
	LEAQ (R10)(R8*1), R11   \
	LEAQ (R11)(R8*1), R12   \
	LEAQ (R12)(R8*1), R13   \
	LEAQ (R13)(R8*1), R14   \
	XORQ AX, AX

// func kern6x8(k int, a *float64, lda int, b *float64, c *float64, ldc int)
// C[r][0:8] = sum over p < k of A[r][p] * B[p][0:8] for r < 6: kern4x8
// on six rows, each entry the same chain of fused multiply-adds.
TEXT ·kern6x8(SB), NOSPLIT, $0-48
	KERN6X8ARGS
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
	VXORPD Y8, Y8, Y8
	VXORPD Y9, Y9, Y9
	VXORPD Y10, Y10, Y10
	VXORPD Y11, Y11, Y11
	TESTQ  CX, CX
	JE     k6_store
	KERN6X8(k6_loop)

k6_store:
	KERN6X8STORE
	VZEROUPPER
	RET

// func kern6x8acc(k int, a *float64, lda int, b *float64, c *float64, ldc int)
// kern6x8 with the running sums started from the tile at c.
TEXT ·kern6x8acc(SB), NOSPLIT, $0-48
	KERN6X8ARGS
	MOVQ    DI, R15
	VMOVUPD (R15), Y0
	VMOVUPD 32(R15), Y1
	ADDQ    R9, R15
	VMOVUPD (R15), Y2
	VMOVUPD 32(R15), Y3
	ADDQ    R9, R15
	VMOVUPD (R15), Y4
	VMOVUPD 32(R15), Y5
	ADDQ    R9, R15
	VMOVUPD (R15), Y6
	VMOVUPD 32(R15), Y7
	ADDQ    R9, R15
	VMOVUPD (R15), Y8
	VMOVUPD 32(R15), Y9
	ADDQ    R9, R15
	VMOVUPD (R15), Y10
	VMOVUPD 32(R15), Y11
	TESTQ   CX, CX
	JE      k6acc_store
	KERN6X8(k6acc_loop)

k6acc_store:
	KERN6X8STORE
	VZEROUPPER
	RET
