#include "textflag.h"

// func adamAsm(n int, c *AdamCoef, x, grad, m, v *float64)
// AdamUpdate on n entries, four per pass: multiplies, adds, the division
// and the square root are the separately rounded packed instructions, in
// the order of adamGo, so every entry gets the scalar loop's bits. grad is
// zeroed.
TEXT ·adamAsm(SB), NOSPLIT, $0-48
	MOVQ         n+0(FP), CX
	MOVQ         c+8(FP), AX
	VBROADCASTSD (AX), Y0     // β₁
	VBROADCASTSD 8(AX), Y1    // 1 − β₁
	VBROADCASTSD 16(AX), Y2   // β₂
	VBROADCASTSD 24(AX), Y3   // 1 − β₂
	VBROADCASTSD 32(AX), Y4   // step
	VBROADCASTSD 40(AX), Y5   // c₂
	VBROADCASTSD 48(AX), Y6   // ε
	MOVQ         x+16(FP), DI
	MOVQ         grad+24(FP), R8
	MOVQ         m+32(FP), R9
	MOVQ         v+40(FP), R10
	VXORPD       Y15, Y15, Y15
	XORQ         SI, SI
	MOVQ         CX, BX
	ANDQ         $-4, BX
	JE           adam_tail

adam_loop4:
	VMOVUPD (R8)(SI*8), Y7       // g
	VMULPD  (R9)(SI*8), Y0, Y8   // β₁·m
	VMULPD  Y7, Y1, Y9           // (1−β₁)·g
	VADDPD  Y9, Y8, Y8           // m
	VMOVUPD Y8, (R9)(SI*8)
	VMULPD  Y7, Y3, Y9           // (1−β₂)·g
	VMULPD  Y7, Y9, Y9           // ((1−β₂)·g)·g
	VMULPD  (R10)(SI*8), Y2, Y10 // β₂·v
	VADDPD  Y9, Y10, Y10         // v
	VMOVUPD Y10, (R10)(SI*8)
	VDIVPD  Y5, Y10, Y11         // v/c₂
	VSQRTPD Y11, Y11
	VADDPD  Y6, Y11, Y11         // √(v/c₂) + ε
	VMULPD  Y8, Y4, Y12          // step·m
	VDIVPD  Y11, Y12, Y12
	VMOVUPD (DI)(SI*8), Y13
	VSUBPD  Y12, Y13, Y13
	VMOVUPD Y13, (DI)(SI*8)
	VMOVUPD Y15, (R8)(SI*8)
	ADDQ    $4, SI
	CMPQ    SI, BX
	JL      adam_loop4

adam_tail:
	CMPQ    SI, CX
	JGE     adam_done
	VMOVSD  (R8)(SI*8), X7
	VMOVSD  (R9)(SI*8), X8
	VMULSD  X8, X0, X8
	VMULSD  X7, X1, X9
	VADDSD  X9, X8, X8
	VMOVSD  X8, (R9)(SI*8)
	VMULSD  X7, X3, X9
	VMULSD  X7, X9, X9
	VMOVSD  (R10)(SI*8), X10
	VMULSD  X10, X2, X10
	VADDSD  X9, X10, X10
	VMOVSD  X10, (R10)(SI*8)
	VDIVSD  X5, X10, X11
	VSQRTSD X11, X11, X11
	VADDSD  X6, X11, X11
	VMULSD  X8, X4, X12
	VDIVSD  X11, X12, X12
	VMOVSD  (DI)(SI*8), X13
	VSUBSD  X12, X13, X13
	VMOVSD  X13, (DI)(SI*8)
	VMOVSD  X15, (R8)(SI*8)
	INCQ    SI
	JMP     adam_tail

adam_done:
	VZEROUPPER
	RET
