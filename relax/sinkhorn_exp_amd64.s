#include "textflag.h"

// func expShiftAsm(x []float64, s float64, c *[expVecLen]float64) float64
//
// For i < len(x) (a multiple of 4): d = x[i] − s, x[i] = exp(d) if
// d ≥ sinkKernMinLog and 0 otherwise (−Inf and NaN included); returns the
// sum of the new x[i], accumulated in four lanes. c holds the constants of
// expVecConst, each repeated four times.
//
// exp(d) = 2^k · exp(r) with k = round(d/ln2), r = d − k·ln2 (ln2 in two
// parts, fused multiply-adds), |r| ≤ ln2/2, and exp(r) the degree-13 Taylor
// polynomial in Horner form; 2^k is applied by adding k to the exponent
// field, which stays normal for d ≥ −700.
TEXT ·expShiftAsm(SB), NOSPLIT, $0-48
	MOVQ         x_base+0(FP), SI
	MOVQ         x_len+8(FP), CX
	VBROADCASTSD s+24(FP), Y15
	MOVQ         c+32(FP), AX
	VXORPD       Y14, Y14, Y14
	VMOVUPD      0(AX), Y13      // sinkKernMinLog
	VMOVUPD      32(AX), Y12     // 1/ln2
	VMOVUPD      64(AX), Y11     // 1.5·2⁵²
	VMOVUPD      96(AX), Y10     // ln2, high part
	VMOVUPD      128(AX), Y9     // ln2, low part
	VMOVUPD      160(AX), Y8     // 1/13!
	XORQ         DX, DX
	ANDQ         $-4, CX
	JE           exp_done

exp_loop:
	VMOVUPD      (SI)(DX*8), Y0
	VSUBPD       Y15, Y0, Y0       // d = x − s
	VCMPPD       $0x1d, Y13, Y0, Y1 // keep = d ≥ min (false for NaN)
	VMOVAPD      Y0, Y2
	VFMADD213PD  Y11, Y12, Y2      // d/ln2 + 1.5·2⁵²: k in the low bits
	VSUBPD       Y11, Y2, Y3       // k as a float64
	VFNMADD231PD Y10, Y3, Y0       // r = d − k·ln2hi
	VFNMADD231PD Y9, Y3, Y0        // r −= k·ln2lo
	VMOVAPD      Y8, Y4
	VFMADD213PD  192(AX), Y0, Y4   // p = p·r + 1/12!
	VFMADD213PD  224(AX), Y0, Y4   // 1/11!
	VFMADD213PD  256(AX), Y0, Y4   // 1/10!
	VFMADD213PD  288(AX), Y0, Y4   // 1/9!
	VFMADD213PD  320(AX), Y0, Y4   // 1/8!
	VFMADD213PD  352(AX), Y0, Y4   // 1/7!
	VFMADD213PD  384(AX), Y0, Y4   // 1/6!
	VFMADD213PD  416(AX), Y0, Y4   // 1/5!
	VFMADD213PD  448(AX), Y0, Y4   // 1/4!
	VFMADD213PD  480(AX), Y0, Y4   // 1/3!
	VFMADD213PD  512(AX), Y0, Y4   // 1/2
	VFMADD213PD  544(AX), Y0, Y4   // 1
	VFMADD213PD  576(AX), Y0, Y4   // 1
	VPSLLQ       $52, Y2, Y2
	VPADDQ       Y2, Y4, Y4        // · 2^k
	VANDPD       Y1, Y4, Y4
	VMOVUPD      Y4, (SI)(DX*8)
	VADDPD       Y4, Y14, Y14
	ADDQ         $4, DX
	CMPQ         DX, CX
	JL           exp_loop

exp_done:
	VEXTRACTF128 $1, Y14, X0
	VADDPD       X14, X0, X0
	VHADDPD      X0, X0, X0
	VMOVSD       X0, ret+40(FP)
	VZEROUPPER
	RET

// func scaleRowAsm(dst, k, b []float64, a float64) bool
//
// dst[j] = (k[j]·a)·b[j] for j < len(dst) (a multiple of 4), rounded as Go
// rounds the same expression; reports whether some dst[j] < sinkTinyProduct.
TEXT ·scaleRowAsm(SB), NOSPLIT, $0-81
	MOVQ         dst_base+0(FP), DI
	MOVQ         dst_len+8(FP), CX
	MOVQ         k_base+24(FP), SI
	MOVQ         b_base+48(FP), DX
	VBROADCASTSD a+72(FP), Y15
	MOVQ         $0x0170000000000000, AX // 2⁻¹⁰⁰⁰
	MOVQ         AX, X14
	VBROADCASTSD X14, Y14
	VXORPD       Y13, Y13, Y13
	XORQ         BX, BX
	ANDQ         $-4, CX
	JE           scale_done

scale_loop:
	VMULPD  (SI)(BX*8), Y15, Y0
	VMULPD  (DX)(BX*8), Y0, Y0
	VMOVUPD Y0, (DI)(BX*8)
	VCMPPD  $0x11, Y14, Y0, Y1 // dst < tiny (ordered, quiet)
	VORPD   Y1, Y13, Y13
	ADDQ    $4, BX
	CMPQ    BX, CX
	JL      scale_loop

scale_done:
	VMOVMSKPD Y13, AX
	TESTQ     AX, AX
	SETNE     ret+80(FP)
	VZEROUPPER
	RET

// func allAbsLEAsm(x []float64, lim float64) bool
//
// Reports whether |x[i]| ≤ lim for every i < len(x) (a multiple of 4);
// false for NaN.
TEXT ·allAbsLEAsm(SB), NOSPLIT, $0-33
	MOVQ         x_base+0(FP), SI
	MOVQ         x_len+8(FP), CX
	VBROADCASTSD lim+24(FP), Y15
	MOVQ         $0x7fffffffffffffff, AX
	MOVQ         AX, X14
	VBROADCASTSD X14, Y14
	VPCMPEQQ     Y13, Y13, Y13 // all ones: every lane so far within lim
	XORQ         BX, BX
	ANDQ         $-4, CX
	JE           abs_done

abs_loop:
	VANDPD  (SI)(BX*8), Y14, Y0
	VCMPPD  $0x12, Y15, Y0, Y1 // |x| ≤ lim (ordered, quiet)
	VANDPD  Y1, Y13, Y13
	ADDQ    $4, BX
	CMPQ    BX, CX
	JL      abs_loop

abs_done:
	VMOVMSKPD Y13, AX
	CMPQ      AX, $15
	SETEQ     ret+32(FP)
	VZEROUPPER
	RET
