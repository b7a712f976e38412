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

// TRANS4 rounds the 4×4 block at rows R10, R10+BX, R10+2·BX, R10+R11 of
// the source, columns AX … AX+3, to float32 and stores its transpose at
// off(R9), off+64(R9), off+128(R9) and off+192(R9): column c of the block
// becomes the four entries of panel row AX+c starting at lane off/4.
#define TRANS4(off) \
	LEAQ       (R10)(BX*1), R13 \
	LEAQ       (R10)(BX*2), R14 \
	LEAQ       (R10)(R11*1), R8 \
	VCVTPD2PSY (R10)(AX*8), X0  \
	VCVTPD2PSY (R13)(AX*8), X1  \
	VCVTPD2PSY (R14)(AX*8), X2  \
	VCVTPD2PSY (R8)(AX*8), X3   \
	VUNPCKLPS  X1, X0, X4       \
	VUNPCKHPS  X1, X0, X5       \
	VUNPCKLPS  X3, X2, X6       \
	VUNPCKHPS  X3, X2, X7       \
	VUNPCKLPD  X6, X4, X0       \
	VUNPCKHPD  X6, X4, X1       \
	VUNPCKLPD  X7, X5, X2       \
	VUNPCKHPD  X7, X5, X3       \
	VMOVUPS    X0, off(R9)      \
	VMOVUPS    X1, off+64(R9)   \
	VMOVUPS    X2, off+128(R9)  \
	VMOVUPS    X3, off+192(R9)

// func packTransAsm(k4, nq int, src *float64, lds int, dst *float32, ldp int)
// For q < nq, r < 16 and p < k4 (a multiple of four):
// dst[q·ldp + 16p + r] = float32(src[(16q + r)·lds + p]), that is the
// panels of the transpose of src: 4×4 blocks are rounded and transposed
// in registers, four blocks down the sixteen rows of a panel at a time.
TEXT ·packTransAsm(SB), NOSPLIT, $0-48
	MOVQ  k4+0(FP), CX
	MOVQ  nq+8(FP), DX
	MOVQ  src+16(FP), SI
	MOVQ  lds+24(FP), BX
	SHLQ  $3, BX             // row stride, bytes
	MOVQ  dst+32(FP), DI
	MOVQ  ldp+40(FP), R15
	SHLQ  $2, R15            // panel stride, bytes
	LEAQ  (BX)(BX*2), R11    // three rows
	MOVQ  BX, R12
	SHLQ  $4, R12            // sixteen rows: the next panel's source
	TESTQ CX, CX
	JE    pt_done

pt_panel:
	TESTQ DX, DX
	JE    pt_done
	XORQ  AX, AX
	MOVQ  DI, R9

pt_cols:
	MOVQ SI, R10
	TRANS4(0)
	LEAQ (R10)(BX*4), R10
	TRANS4(16)
	LEAQ (R10)(BX*4), R10
	TRANS4(32)
	LEAQ (R10)(BX*4), R10
	TRANS4(48)
	ADDQ $4, AX
	ADDQ $256, R9
	CMPQ AX, CX
	JL   pt_cols
	ADDQ R12, SI
	ADDQ R15, DI
	DECQ DX
	JMP  pt_panel

pt_done:
	VZEROUPPER
	RET

// func packLeftTransAsm(m4, k4 int, src *float64, lds int, dst *float32, ldd int)
// For i < m4 and p < k4 (both multiples of four):
// dst[i·ldd + p] = float32(src[p·lds + i]): rows of the transpose of src,
// 4×4 blocks rounded and transposed in registers.
TEXT ·packLeftTransAsm(SB), NOSPLIT, $0-48
	MOVQ  m4+0(FP), CX
	MOVQ  k4+8(FP), R15
	MOVQ  src+16(FP), SI
	MOVQ  lds+24(FP), BX
	SHLQ  $3, BX             // source row stride, bytes
	MOVQ  dst+32(FP), DI
	MOVQ  ldd+40(FP), DX
	SHLQ  $2, DX             // destination row stride, bytes
	LEAQ  (BX)(BX*2), R11    // three source rows
	LEAQ  (DX)(DX*2), R12    // three destination rows
	TESTQ CX, CX
	JE    plt_done
	TESTQ R15, R15
	JE    plt_done

plt_cols:                  // four source rows, p … p+3, at SI
	MOVQ SI, R10
	LEAQ (R10)(BX*1), R13
	LEAQ (R10)(BX*2), R14
	LEAQ (R10)(R11*1), R8
	MOVQ DI, R9
	XORQ AX, AX

plt_rows:                  // destination rows i … i+3 at R9
	VCVTPD2PSY (R10)(AX*8), X0
	VCVTPD2PSY (R13)(AX*8), X1
	VCVTPD2PSY (R14)(AX*8), X2
	VCVTPD2PSY (R8)(AX*8), X3
	VUNPCKLPS  X1, X0, X4
	VUNPCKHPS  X1, X0, X5
	VUNPCKLPS  X3, X2, X6
	VUNPCKHPS  X3, X2, X7
	VUNPCKLPD  X6, X4, X0
	VUNPCKHPD  X6, X4, X1
	VUNPCKLPD  X7, X5, X2
	VUNPCKHPD  X7, X5, X3
	VMOVUPS    X0, (R9)
	VMOVUPS    X1, (R9)(DX*1)
	VMOVUPS    X2, (R9)(DX*2)
	VMOVUPS    X3, (R9)(R12*1)
	LEAQ       (R9)(DX*4), R9
	ADDQ       $4, AX
	CMPQ       AX, CX
	JL         plt_rows
	LEAQ       (SI)(BX*4), SI
	ADDQ       $16, DI
	SUBQ       $4, R15
	JNZ        plt_cols

plt_done:
	VZEROUPPER
	RET
