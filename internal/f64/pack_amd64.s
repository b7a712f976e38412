#include "textflag.h"

// func packRowsAsm(rows, np int, src *float64, lds int, dst *float64, ldp int)
// For q < np and r < rows: copies the 8 doubles at src + r·lds + 8q to
// dst + q·ldp + 8r (strides in doubles): rows of a row-major matrix into
// its 8-wide column panels.
TEXT ·packRowsAsm(SB), NOSPLIT, $0-48
	MOVQ rows+0(FP), CX
	MOVQ np+8(FP), DX
	MOVQ src+16(FP), SI
	MOVQ lds+24(FP), R8
	SHLQ $3, R8
	MOVQ dst+32(FP), DI
	MOVQ ldp+40(FP), R9
	SHLQ $3, R9
	TESTQ CX, CX
	JE    pr_done
	TESTQ DX, DX
	JE    pr_done

pr_panel:
	MOVQ SI, R10 // source row r, columns 8q …
	MOVQ DI, R11 // panel q, row r
	MOVQ CX, R12

pr_row:
	VMOVUPD (R10), Y0
	VMOVUPD 32(R10), Y1
	VMOVUPD Y0, (R11)
	VMOVUPD Y1, 32(R11)
	ADDQ    R8, R10
	ADDQ    $64, R11
	DECQ    R12
	JNZ     pr_row

	ADDQ $64, SI
	ADDQ R9, DI
	DECQ DX
	JNZ  pr_panel

pr_done:
	VZEROUPPER
	RET

// TRANSPOSE4 transposes the 4×4 block in rows a, b, c, d (one row per
// register) into the same registers, using t0 … t3 as scratch: t0 = a0 b0
// a2 b2, t1 = a1 b1 a3 b3, t2 = c0 d0 c2 d2, t3 = c1 d1 c3 d3, then a =
// a0 b0 c0 d0 (low halves of t0, t2), b = a1 b1 c1 d1, c = a2 b2 c2 d2
// (high halves), d = a3 b3 c3 d3.
#define TRANSPOSE4(a, b, c, d, t0, t1, t2, t3) \
	VUNPCKLPD  b, a, t0         \
	VUNPCKHPD  b, a, t1         \
	VUNPCKLPD  d, c, t2         \
	VUNPCKHPD  d, c, t3         \
	VPERM2F128 $0x20, t2, t0, a \
	VPERM2F128 $0x20, t3, t1, b \
	VPERM2F128 $0x31, t2, t0, c \
	VPERM2F128 $0x31, t3, t1, d

// func packTrans8Asm(k4 int, src *float64, lds int, dst *float64)
// dst[8r+j] = src[j·lds + r] for j < 8 and r < k4 (a multiple of 4): eight
// rows of length k4 interleaved into a panel, four columns at a time by
// two 4×4 transposes.
TEXT ·packTrans8Asm(SB), NOSPLIT, $0-32
	MOVQ k4+0(FP), CX
	MOVQ src+8(FP), SI
	MOVQ lds+16(FP), R8
	SHLQ $3, R8
	MOVQ dst+24(FP), DI
	LEAQ (SI)(R8*1), R9  // row 1
	LEAQ (R9)(R8*1), R10 // row 2
	LEAQ (R10)(R8*1), R11 // row 3
	LEAQ (R11)(R8*1), R12 // row 4
	LEAQ (R12)(R8*1), R13 // row 5
	LEAQ (R13)(R8*1), R14 // row 6
	LEAQ (R14)(R8*1), R15 // row 7
	XORQ AX, AX
	SHRQ $2, CX
	JE   pt_done

pt_loop:
	VMOVUPD (SI)(AX*8), Y0
	VMOVUPD (R9)(AX*8), Y1
	VMOVUPD (R10)(AX*8), Y2
	VMOVUPD (R11)(AX*8), Y3
	TRANSPOSE4(Y0, Y1, Y2, Y3, Y8, Y9, Y10, Y11)
	VMOVUPD (R12)(AX*8), Y4
	VMOVUPD (R13)(AX*8), Y5
	VMOVUPD (R14)(AX*8), Y6
	VMOVUPD (R15)(AX*8), Y7
	TRANSPOSE4(Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11)
	VMOVUPD Y0, (DI)
	VMOVUPD Y4, 32(DI)
	VMOVUPD Y1, 64(DI)
	VMOVUPD Y5, 96(DI)
	VMOVUPD Y2, 128(DI)
	VMOVUPD Y6, 160(DI)
	VMOVUPD Y3, 192(DI)
	VMOVUPD Y7, 224(DI)
	ADDQ    $4, AX
	ADDQ    $256, DI
	DECQ    CX
	JNZ     pt_loop

pt_done:
	VZEROUPPER
	RET

// func transpose4Asm(nb int, src *float64, lds int, dst *float64, ldd int)
// For the 4 rows at src (stride lds) and nb blocks of 4 columns: writes
// the transpose of block b, columns 4b … 4b+3, to rows 4b … 4b+3 of dst
// (stride ldd), 4 entries each.
TEXT ·transpose4Asm(SB), NOSPLIT, $0-40
	MOVQ nb+0(FP), CX
	MOVQ src+8(FP), SI
	MOVQ lds+16(FP), R8
	SHLQ $3, R8
	MOVQ dst+24(FP), DI
	MOVQ ldd+32(FP), R9
	SHLQ $3, R9
	LEAQ (SI)(R8*1), R10
	LEAQ (R10)(R8*1), R11
	LEAQ (R11)(R8*1), R12
	LEAQ (R9)(R9*2), R13 // 3·ldd
	TESTQ CX, CX
	JE    tr_done

tr_loop:
	VMOVUPD (SI), Y0
	VMOVUPD (R10), Y1
	VMOVUPD (R11), Y2
	VMOVUPD (R12), Y3
	TRANSPOSE4(Y0, Y1, Y2, Y3, Y8, Y9, Y10, Y11)
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, (DI)(R9*1)
	VMOVUPD Y2, (DI)(R9*2)
	VMOVUPD Y3, (DI)(R13*1)
	ADDQ    $32, SI
	ADDQ    $32, R10
	ADDQ    $32, R11
	ADDQ    $32, R12
	LEAQ    (DI)(R9*4), DI
	DECQ    CX
	JNZ     tr_loop

tr_done:
	VZEROUPPER
	RET
