#include "textflag.h"

// Constants of math.Exp's amd64 assembly (exp_amd64.s), four copies each.
#define EXPC(off, bits) DATA expv<>+off+0(SB)/8, $bits; DATA expv<>+off+8(SB)/8, $bits; DATA expv<>+off+16(SB)/8, $bits; DATA expv<>+off+24(SB)/8, $bits

EXPC(0, 0x7fffffffffffffff)   // |x| mask
EXPC(32, 0x4086200000000000)  // 708
EXPC(64, 0x3ff71547652b82fe)  // log₂ e
EXPC(96, 0x3fe62e42fefa3000)  // ln 2, upper part
EXPC(128, 0x3d53de6af278ece6) // ln 2, lower part
EXPC(160, 0x3fb0000000000000) // 1/16
EXPC(192, 0x3efa01a01a01a01a) // 1/8!
EXPC(224, 0x3f2a01a01a01a01a) // 1/7!
EXPC(256, 0x3f56c16c16c16c17) // 1/6!
EXPC(288, 0x3f81111111111111) // 1/5!
EXPC(320, 0x3fa5555555555555) // 1/4!
EXPC(352, 0x3fc5555555555555) // 1/3!
EXPC(384, 0x3fe0000000000000) // 1/2
EXPC(416, 0x3ff0000000000000) // 1
EXPC(448, 0x4000000000000000) // 2
EXPC(480, 0x00000000000003ff) // exponent bias
GLOBL expv<>(SB), RODATA, $512

// func expAsm(n int, dst, x *float64) int
// math.Exp's fused-multiply-add path on four entries per pass, in its
// order: k = round(x·log₂e); r = (x − k·ln2U − k·ln2L)/16 (fused);
// p = r·(Horner of 1/8! … 1/2, 1 by fused multiply-adds); then p = p·(p+2)
// three times and p·(p+2) + 1 fused, which is e^(16r); times 2^k.
TEXT ·expAsm(SB), NOSPLIT, $0-32
	MOVQ n+0(FP), CX
	MOVQ dst+8(FP), DI
	MOVQ x+16(FP), SI
	ANDQ $-4, CX
	XORQ AX, AX

exp_loop:
	CMPQ AX, CX
	JGE  exp_done
	VMOVUPD (SI)(AX*8), Y0
	VANDPD  expv<>+0(SB), Y0, Y1
	VCMPPD  $0x12, expv<>+32(SB), Y1, Y1 // |x| ≤ 708, false for NaN
	VMOVMSKPD Y1, BX
	CMPQ    BX, $15
	JNE     exp_done

	VMULPD     expv<>+64(SB), Y0, Y1
	VCVTPD2DQY Y1, X2            // k, rounded to nearest
	VCVTDQ2PD  X2, Y1
	VMOVUPD    expv<>+96(SB), Y3
	VFNMADD231PD Y3, Y1, Y0      // x − k·ln2U
	VMOVUPD    expv<>+128(SB), Y3
	VFNMADD231PD Y3, Y1, Y0      // − k·ln2L
	VMULPD     expv<>+160(SB), Y0, Y0 // r
	VMOVUPD    expv<>+192(SB), Y1
	VFMADD213PD expv<>+224(SB), Y0, Y1
	VFMADD213PD expv<>+256(SB), Y0, Y1
	VFMADD213PD expv<>+288(SB), Y0, Y1
	VFMADD213PD expv<>+320(SB), Y0, Y1
	VFMADD213PD expv<>+352(SB), Y0, Y1
	VFMADD213PD expv<>+384(SB), Y0, Y1
	VFMADD213PD expv<>+416(SB), Y0, Y1
	VMULPD  Y1, Y0, Y0
	VADDPD  expv<>+448(SB), Y0, Y1
	VMULPD  Y1, Y0, Y0
	VADDPD  expv<>+448(SB), Y0, Y1
	VMULPD  Y1, Y0, Y0
	VADDPD  expv<>+448(SB), Y0, Y1
	VMULPD  Y1, Y0, Y0
	VADDPD  expv<>+448(SB), Y0, Y1
	VFMADD213PD expv<>+416(SB), Y1, Y0

	VPMOVSXDQ X2, Y3             // 2^k
	VPADDQ    expv<>+480(SB), Y3, Y3
	VPSLLQ    $52, Y3, Y3
	VMULPD    Y3, Y0, Y0
	VMOVUPD   Y0, (DI)(AX*8)
	ADDQ      $4, AX
	JMP       exp_loop

exp_done:
	MOVQ AX, ret+24(FP)
	VZEROUPPER
	RET

// Constants of math.Log1p (log1p.go), four copies each.
#define L1PC(off, bits) DATA l1pv<>+off+0(SB)/8, $bits; DATA l1pv<>+off+8(SB)/8, $bits; DATA l1pv<>+off+16(SB)/8, $bits; DATA l1pv<>+off+24(SB)/8, $bits

L1PC(0, 0x3e20000000000000)   // 2⁻²⁹
L1PC(32, 0x3feffffe00000000)  // 1 − 2⁻²⁰
L1PC(64, 0x3fda827999fcef32)  // √2 − 1
L1PC(96, 0x3ff0000000000000)  // 1
L1PC(128, 0x000fffffffffffff) // mantissa mask
L1PC(160, 0x0006a09e667f3bcc) // mantissa of √2, less one
L1PC(192, 0x3ff0000000000000) // exponent of [1, 2)
L1PC(224, 0x3fe0000000000000) // exponent of [1/2, 1)
L1PC(256, 0x3fe0000000000000) // 0.5
L1PC(288, 0x4000000000000000) // 2
L1PC(320, 0x3FC2F112DF3E5244) // Lp7
L1PC(352, 0x3FC39A09D078C69F) // Lp6
L1PC(384, 0x3FC7466496CB03DE) // Lp5
L1PC(416, 0x3FCC71C51D8E78AF) // Lp4
L1PC(448, 0x3FD2492494229359) // Lp3
L1PC(480, 0x3FD999999997FA04) // Lp2
L1PC(512, 0x3FE5555555555593) // Lp1
L1PC(544, 0x3fe62e42fee00000) // Ln2Hi
L1PC(576, 0x3dea39ef35793c76) // Ln2Lo
GLOBL l1pv<>(SB), RODATA, $608

// func log1pAsm(n int, dst, x *float64) int
// math.Log1p on 0 ≤ x < 1 − 2⁻²⁰, four entries per pass, every operation
// rounded on its own as in its Go code:
//   x < 2⁻²⁹:     x − x·x·0.5
//   x < √2 − 1:   f = x, result f − (hfsq − s·(hfsq+R))
//   otherwise:    u = 1 + x, c = (x − (u − 1))/u; u reduced to [√2/2, √2)
//                 by its mantissa (k = 0 or 1), f = u − 1; k = 0 gives the
//                 result above, k = 1 gives
//                 Ln2Hi − ((hfsq − (s·(hfsq+R) + (Ln2Lo + c))) − f)
// with hfsq = 0.5·f·f, s = f/(2+f), z = s², R = z·(Lp1 + z·(… + z·Lp7)).
TEXT ·log1pAsm(SB), NOSPLIT, $0-32
	MOVQ   n+0(FP), CX
	MOVQ   dst+8(FP), DI
	MOVQ   x+16(FP), SI
	ANDQ   $-4, CX
	XORQ   AX, AX
	VXORPD Y15, Y15, Y15

l1p_loop:
	CMPQ AX, CX
	JGE  l1p_done
	VMOVUPD (SI)(AX*8), Y0                // x
	VCMPPD  $0x1D, Y15, Y0, Y1            // x ≥ 0
	VCMPPD  $0x11, l1pv<>+32(SB), Y0, Y2  // x < 1 − 2⁻²⁰
	VANDPD  Y1, Y2, Y1
	VMOVMSKPD Y1, BX
	CMPQ    BX, $15
	JNE     l1p_done

	VADDPD  l1pv<>+96(SB), Y0, Y1         // u = 1 + x
	VSUBPD  l1pv<>+96(SB), Y1, Y2         // u − 1
	VSUBPD  Y2, Y0, Y2                    // x − (u − 1)
	VDIVPD  Y1, Y2, Y2                    // c
	VANDPD  l1pv<>+128(SB), Y1, Y3        // iu, the mantissa bits of u
	VPCMPGTQ l1pv<>+160(SB), Y3, Y4       // k = 1 where iu ≥ mantissa of √2
	VMOVUPD  l1pv<>+192(SB), Y5
	VBLENDVPD Y4, l1pv<>+224(SB), Y5, Y5
	VORPD   Y5, Y3, Y5                    // u, or u/2 where k = 1
	VSUBPD  l1pv<>+96(SB), Y5, Y5         // f = u − 1
	VCMPPD  $0x11, l1pv<>+64(SB), Y0, Y6  // x < √2 − 1
	VBLENDVPD Y6, Y0, Y5, Y5              // f = x there
	VANDNPD Y4, Y6, Y4                    // k = 1 only where x ≥ √2 − 1

	VMULPD  l1pv<>+256(SB), Y5, Y6
	VMULPD  Y5, Y6, Y6                    // hfsq
	VADDPD  l1pv<>+288(SB), Y5, Y7
	VDIVPD  Y7, Y5, Y7                    // s
	VMULPD  Y7, Y7, Y8                    // z
	VMULPD  l1pv<>+320(SB), Y8, Y9
	VADDPD  l1pv<>+352(SB), Y9, Y9
	VMULPD  Y8, Y9, Y9
	VADDPD  l1pv<>+384(SB), Y9, Y9
	VMULPD  Y8, Y9, Y9
	VADDPD  l1pv<>+416(SB), Y9, Y9
	VMULPD  Y8, Y9, Y9
	VADDPD  l1pv<>+448(SB), Y9, Y9
	VMULPD  Y8, Y9, Y9
	VADDPD  l1pv<>+480(SB), Y9, Y9
	VMULPD  Y8, Y9, Y9
	VADDPD  l1pv<>+512(SB), Y9, Y9
	VMULPD  Y8, Y9, Y9                    // R
	VADDPD  Y9, Y6, Y10
	VMULPD  Y10, Y7, Y10                  // s·(hfsq+R)
	VSUBPD  Y10, Y6, Y11
	VSUBPD  Y11, Y5, Y11                  // result for k = 0
	VADDPD  l1pv<>+576(SB), Y2, Y12       // Ln2Lo + c
	VADDPD  Y12, Y10, Y12
	VSUBPD  Y12, Y6, Y12
	VSUBPD  Y5, Y12, Y12
	VMOVUPD l1pv<>+544(SB), Y13
	VSUBPD  Y12, Y13, Y12                 // result for k = 1
	VBLENDVPD Y4, Y12, Y11, Y11

	VMULPD  Y0, Y0, Y12
	VMULPD  l1pv<>+256(SB), Y12, Y12
	VSUBPD  Y12, Y0, Y12                  // x − x·x·0.5
	VCMPPD  $0x11, l1pv<>+0(SB), Y0, Y13  // x < 2⁻²⁹
	VBLENDVPD Y13, Y12, Y11, Y11
	VMOVUPD Y11, (DI)(AX*8)
	ADDQ    $4, AX
	JMP     l1p_loop

l1p_done:
	MOVQ AX, ret+24(FP)
	VZEROUPPER
	RET

// Constants of math.Log's amd64 assembly (log_amd64.s), four copies each.
#define LGC(off, bits) DATA lgv<>+off+0(SB)/8, $bits; DATA lgv<>+off+8(SB)/8, $bits; DATA lgv<>+off+16(SB)/8, $bits; DATA lgv<>+off+24(SB)/8, $bits

LGC(0, 0x0010000000000000)   // smallest normal
LGC(32, 0x7ff0000000000000)  // +Inf
LGC(64, 0x000fffffffffffff)  // mantissa mask
LGC(96, 0x3fe0000000000000)  // 0.5
LGC(128, 0x00000000000003fe) // exponent of [1/2, 1)
LGC(160, 0x4338000000000000) // 1.5·2⁵², to convert small integers
LGC(192, 0x3fe6a09e667f3bcd) // √2/2
LGC(224, 0x3ff0000000000000) // 1
LGC(256, 0x4000000000000000) // 2
LGC(288, 0x3fc2f112df3e5244) // L7
LGC(320, 0x3fc7466496cb03de) // L5
LGC(352, 0x3fd2492494229359) // L3
LGC(384, 0x3fe5555555555593) // L1
LGC(416, 0x3fc39a09d078c69f) // L6
LGC(448, 0x3fcc71c51d8e78af) // L4
LGC(480, 0x3fd999999997fa04) // L2
LGC(512, 0x3fe62e42fee00000) // Ln2Hi
LGC(544, 0x3dea39ef35793c76) // Ln2Lo
GLOBL lgv<>(SB), RODATA, $576

// func logAsm(n int, dst, x *float64) int
// math.Log's amd64 assembly on four entries per pass, in its order: x =
// f1·2^k with f1 in [1/2, 1); where f1 ≤ √2/2, k − 1 and 2·f1; f = f1 − 1,
// s = f/(2+f), s2 = s², s4 = s2²; t1 = s2·(L1 + s4·(L3 + s4·(L5 + s4·L7))),
// t2 = s4·(L2 + s4·(L4 + s4·L6)); hfsq = 0.5·f·f; result
// k·Ln2Hi − ((hfsq − (s·(hfsq + t1 + t2) + k·Ln2Lo)) − f). Stops at the
// first group with an entry that is not a positive normal number.
TEXT ·logAsm(SB), NOSPLIT, $0-32
	MOVQ n+0(FP), CX
	MOVQ dst+8(FP), DI
	MOVQ x+16(FP), SI
	ANDQ $-4, CX
	XORQ AX, AX

log_loop:
	CMPQ AX, CX
	JGE  log_done
	VMOVUPD (SI)(AX*8), Y0
	VCMPPD  $0x1D, lgv<>+0(SB), Y0, Y1   // x ≥ smallest normal
	VCMPPD  $0x11, lgv<>+32(SB), Y0, Y2  // x < +Inf
	VANDPD  Y1, Y2, Y1
	VMOVMSKPD Y1, BX
	CMPQ    BX, $15
	JNE     log_done

	VANDPD  lgv<>+64(SB), Y0, Y2
	VORPD   lgv<>+96(SB), Y2, Y2         // f1
	VPSRLQ  $52, Y0, Y1
	VPSUBQ  lgv<>+128(SB), Y1, Y1
	VPADDQ  lgv<>+160(SB), Y1, Y1
	VSUBPD  lgv<>+160(SB), Y1, Y1        // k
	VMOVUPD lgv<>+192(SB), Y3
	VCMPPD  $0x05, Y2, Y3, Y3            // !(√2/2 < f1)
	VANDPD  lgv<>+224(SB), Y3, Y3        // 0 or 1
	VSUBPD  Y3, Y1, Y1
	VADDPD  lgv<>+224(SB), Y3, Y3        // 1 or 2
	VMULPD  Y3, Y2, Y2
	VSUBPD  lgv<>+224(SB), Y2, Y2        // f
	VADDPD  lgv<>+256(SB), Y2, Y3
	VDIVPD  Y3, Y2, Y3                   // s
	VMULPD  Y3, Y3, Y4                   // s2
	VMULPD  Y4, Y4, Y5                   // s4
	VMULPD  lgv<>+288(SB), Y5, Y6
	VADDPD  lgv<>+320(SB), Y6, Y6
	VMULPD  Y5, Y6, Y6
	VADDPD  lgv<>+352(SB), Y6, Y6
	VMULPD  Y5, Y6, Y6
	VADDPD  lgv<>+384(SB), Y6, Y6
	VMULPD  Y6, Y4, Y4                   // t1
	VMULPD  lgv<>+416(SB), Y5, Y6
	VADDPD  lgv<>+448(SB), Y6, Y6
	VMULPD  Y5, Y6, Y6
	VADDPD  lgv<>+480(SB), Y6, Y6
	VMULPD  Y6, Y5, Y5                   // t2
	VADDPD  Y5, Y4, Y4                   // R
	VMULPD  lgv<>+96(SB), Y2, Y0
	VMULPD  Y2, Y0, Y0                   // hfsq
	VADDPD  Y0, Y4, Y4
	VMULPD  Y4, Y3, Y3                   // s·(hfsq+R)
	VMULPD  lgv<>+544(SB), Y1, Y4        // k·Ln2Lo
	VADDPD  Y4, Y3, Y3
	VSUBPD  Y3, Y0, Y0
	VSUBPD  Y2, Y0, Y0
	VMULPD  lgv<>+512(SB), Y1, Y1        // k·Ln2Hi
	VSUBPD  Y0, Y1, Y1
	VMOVUPD Y1, (DI)(AX*8)
	ADDQ    $4, AX
	JMP     log_loop

log_done:
	MOVQ AX, ret+24(FP)
	VZEROUPPER
	RET

// func logisticGradAsm(n int, a float64, dst, x, e, y *float64)
// For i < n − n mod 4: dst[i] += a·(σ − y[i]) with σ = 1/(1+e[i]) where
// x[i] ≥ 0 (or NaN) and e[i]/(1+e[i]) where x[i] < 0; every operation
// rounded on its own, as in AddLogisticGrad's loop.
TEXT ·logisticGradAsm(SB), NOSPLIT, $0-48
	MOVQ         n+0(FP), CX
	VBROADCASTSD a+8(FP), Y15
	MOVQ         dst+16(FP), DI
	MOVQ         x+24(FP), SI
	MOVQ         e+32(FP), R8
	MOVQ         y+40(FP), R9
	ANDQ         $-4, CX
	XORQ         AX, AX
	VXORPD       Y14, Y14, Y14
	VMOVUPD      l1pv<>+96(SB), Y13 // 1

lg_loop:
	CMPQ      AX, CX
	JGE       lg_done
	VMOVUPD   (R8)(AX*8), Y0        // e
	VADDPD    Y13, Y0, Y1           // 1 + e
	VMOVUPD   (SI)(AX*8), Y2
	VCMPPD    $0x11, Y14, Y2, Y2    // x < 0
	VBLENDVPD Y2, Y0, Y13, Y3       // e where x < 0, else 1
	VDIVPD    Y1, Y3, Y3            // σ
	VSUBPD    (R9)(AX*8), Y3, Y3    // σ − y
	VMULPD    Y3, Y15, Y3           // a·(σ − y)
	VADDPD    (DI)(AX*8), Y3, Y3
	VMOVUPD   Y3, (DI)(AX*8)
	ADDQ      $4, AX
	JMP       lg_loop

lg_done:
	VZEROUPPER
	RET
