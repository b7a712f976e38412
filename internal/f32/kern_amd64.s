#include "textflag.h"

// KERN6X16 is the loop of kern6x16 and kern6x16acc: for p < k (CX) it
// adds A[r][p]·B[p][0:16] to the float32 running sums of rows r < 6 (Y0 …
// Y11, two registers of eight lanes a row), A's rows at SI, R10 … R14
// and B's panel at DX.
#define KERN6X16(label) \
label:                                  \
	VMOVUPS      (DX), Y12              \
	VMOVUPS      32(DX), Y13            \
	VBROADCASTSS (SI)(AX*4), Y14        \
	VBROADCASTSS (R10)(AX*4), Y15       \
	VFMADD231PS  Y12, Y14, Y0           \
	VFMADD231PS  Y13, Y14, Y1           \
	VFMADD231PS  Y12, Y15, Y2           \
	VFMADD231PS  Y13, Y15, Y3           \
	VBROADCASTSS (R11)(AX*4), Y14       \
	VBROADCASTSS (R12)(AX*4), Y15       \
	VFMADD231PS  Y12, Y14, Y4           \
	VFMADD231PS  Y13, Y14, Y5           \
	VFMADD231PS  Y12, Y15, Y6           \
	VFMADD231PS  Y13, Y15, Y7           \
	VBROADCASTSS (R13)(AX*4), Y14       \
	VBROADCASTSS (R14)(AX*4), Y15       \
	VFMADD231PS  Y12, Y14, Y8           \
	VFMADD231PS  Y13, Y14, Y9           \
	VFMADD231PS  Y12, Y15, Y10          \
	VFMADD231PS  Y13, Y15, Y11          \
	ADDQ         $64, DX                \
	INCQ         AX                     \
	CMPQ         AX, CX                 \
	JL           label

// STOREROW converts the sixteen float32 sums of one row (lo: columns
// 0-7, hi: 8-15) to float64 and stores them at DI, then moves DI on by
// one row (R9 bytes).
#define STOREROW(lo, hi, xlo, xhi) \
	VCVTPS2PD    xlo, Y12       \
	VEXTRACTF128 $1, lo, X13    \
	VCVTPS2PD    X13, Y13       \
	VMOVUPD      Y12, (DI)      \
	VMOVUPD      Y13, 32(DI)    \
	VCVTPS2PD    xhi, Y12       \
	VEXTRACTF128 $1, hi, X13    \
	VCVTPS2PD    X13, Y13       \
	VMOVUPD      Y12, 64(DI)    \
	VMOVUPD      Y13, 96(DI)    \
	ADDQ         R9, DI

// ADDROW is STOREROW adding the converted sums to the float64 values at
// DI instead of overwriting them.
#define ADDROW(lo, hi, xlo, xhi) \
	VCVTPS2PD    xlo, Y12       \
	VEXTRACTF128 $1, lo, X13    \
	VCVTPS2PD    X13, Y13       \
	VADDPD       (DI), Y12, Y12 \
	VADDPD       32(DI), Y13, Y13 \
	VMOVUPD      Y12, (DI)      \
	VMOVUPD      Y13, 32(DI)    \
	VCVTPS2PD    xhi, Y12       \
	VEXTRACTF128 $1, hi, X13    \
	VCVTPS2PD    X13, Y13       \
	VADDPD       64(DI), Y12, Y12 \
	VADDPD       96(DI), Y13, Y13 \
	VMOVUPD      Y12, 64(DI)    \
	VMOVUPD      Y13, 96(DI)    \
	ADDQ         R9, DI

// ARGS loads k into CX, the six rows of A into SI, R10 … R14, the panel
// into DX, the tile into DI with its row stride in R9 (bytes), sets AX =
// 0 and clears the sums.
#define ARGS \
	MOVQ   k+0(FP), CX          \
	MOVQ   a+8(FP), SI          \
	MOVQ   lda+16(FP), R8       \
	SHLQ   $2, R8               \
	MOVQ   b+24(FP), DX         \
	MOVQ   c+32(FP), DI         \
	MOVQ   ldc+40(FP), R9       \
	SHLQ   $3, R9               \
	LEAQ   (SI)(R8*1), R10      \
	LEAQ   (R10)(R8*1), R11     \
	LEAQ   (R11)(R8*1), R12     \
	LEAQ   (R12)(R8*1), R13     \
	LEAQ   (R13)(R8*1), R14     \
	XORQ   AX, AX               \
	VXORPS Y0, Y0, Y0      \
	VXORPS Y1, Y1, Y1      \
	VXORPS Y2, Y2, Y2      \
	VXORPS Y3, Y3, Y3      \
	VXORPS Y4, Y4, Y4      \
	VXORPS Y5, Y5, Y5      \
	VXORPS Y6, Y6, Y6      \
	VXORPS Y7, Y7, Y7      \
	VXORPS Y8, Y8, Y8      \
	VXORPS Y9, Y9, Y9      \
	VXORPS Y10, Y10, Y10   \
	VXORPS Y11, Y11, Y11

// func kern6x16(k int, a *float32, lda int, b *float32, c *float64, ldc int)
TEXT ·kern6x16(SB), NOSPLIT, $0-48
	ARGS
	TESTQ CX, CX
	JE    set_store
	KERN6X16(set_loop)

set_store:
	STOREROW(Y0, Y1, X0, X1)
	STOREROW(Y2, Y3, X2, X3)
	STOREROW(Y4, Y5, X4, X5)
	STOREROW(Y6, Y7, X6, X7)
	STOREROW(Y8, Y9, X8, X9)
	STOREROW(Y10, Y11, X10, X11)
	VZEROUPPER
	RET

// func kern6x16acc(k int, a *float32, lda int, b *float32, c *float64, ldc int)
TEXT ·kern6x16acc(SB), NOSPLIT, $0-48
	ARGS
	TESTQ CX, CX
	JE    acc_store
	KERN6X16(acc_loop)

acc_store:
	ADDROW(Y0, Y1, X0, X1)
	ADDROW(Y2, Y3, X2, X3)
	ADDROW(Y4, Y5, X4, X5)
	ADDROW(Y6, Y7, X6, X7)
	ADDROW(Y8, Y9, X8, X9)
	ADDROW(Y10, Y11, X10, X11)
	VZEROUPPER
	RET

// func cvtAsm(n int, src *float64, dst *float32)
// dst[i] = float32(src[i]) for i < n, n a multiple of 16.
TEXT ·cvtAsm(SB), NOSPLIT, $0-24
	MOVQ  n+0(FP), CX
	MOVQ  src+8(FP), SI
	MOVQ  dst+16(FP), DI
	SHRQ  $4, CX
	JE    cvt_done

cvt_loop:
	VCVTPD2PSY (SI), X0
	VCVTPD2PSY 32(SI), X1
	VCVTPD2PSY 64(SI), X2
	VCVTPD2PSY 96(SI), X3
	VMOVUPS    X0, (DI)
	VMOVUPS    X1, 16(DI)
	VMOVUPS    X2, 32(DI)
	VMOVUPS    X3, 48(DI)
	ADDQ       $128, SI
	ADDQ       $64, DI
	DECQ       CX
	JNZ        cvt_loop

cvt_done:
	VZEROUPPER
	RET

// func packPanelsAsm(k, nq int, src *float64, lds int, dst *float32, ldp int)
// For r < k and q < nq: dst[q·ldp + 16r + j] = float32(src[r·lds + 16q + j]),
// j < 16: rows of src are read in order, sixteen entries into each panel.
TEXT ·packPanelsAsm(SB), NOSPLIT, $0-48
	MOVQ  k+0(FP), CX
	MOVQ  nq+8(FP), BX
	MOVQ  src+16(FP), SI
	MOVQ  lds+24(FP), R8
	SHLQ  $3, R8
	MOVQ  dst+32(FP), DI
	MOVQ  ldp+40(FP), R9
	SHLQ  $2, R9
	TESTQ CX, CX
	JE    pp_done
	TESTQ BX, BX
	JE    pp_done

pp_row:
	MOVQ SI, R10
	MOVQ DI, R11
	MOVQ BX, DX

pp_panel:
	VCVTPD2PSY (R10), X0
	VCVTPD2PSY 32(R10), X1
	VCVTPD2PSY 64(R10), X2
	VCVTPD2PSY 96(R10), X3
	VMOVUPS    X0, (R11)
	VMOVUPS    X1, 16(R11)
	VMOVUPS    X2, 32(R11)
	VMOVUPS    X3, 48(R11)
	ADDQ       $128, R10
	ADDQ       R9, R11
	DECQ       DX
	JNZ        pp_panel
	ADDQ       R8, SI
	ADDQ       $64, DI
	DECQ       CX
	JNZ        pp_row

pp_done:
	VZEROUPPER
	RET
