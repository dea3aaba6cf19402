//go:build !purego

#include "textflag.h"
#include "axpy6_amd64.h"

// The small kernels of simd.go for amd64: AVX2 with FMA (and F16C for the half
// conversion), and AVX-512 (F) versions of the ones that are not memory-bound. See
// simd_generic.go for what each computes.

// negzero<>: sign bit.
DATA negzero<>+0(SB)/4, $0x80000000
DATA negzero<>+4(SB)/4, $0x80000000
DATA negzero<>+8(SB)/4, $0x80000000
DATA negzero<>+12(SB)/4, $0x80000000
DATA negzero<>+16(SB)/4, $0x80000000
DATA negzero<>+20(SB)/4, $0x80000000
DATA negzero<>+24(SB)/4, $0x80000000
DATA negzero<>+28(SB)/4, $0x80000000
DATA negzero<>+32(SB)/4, $0x80000000
DATA negzero<>+36(SB)/4, $0x80000000
DATA negzero<>+40(SB)/4, $0x80000000
DATA negzero<>+44(SB)/4, $0x80000000
DATA negzero<>+48(SB)/4, $0x80000000
DATA negzero<>+52(SB)/4, $0x80000000
DATA negzero<>+56(SB)/4, $0x80000000
DATA negzero<>+60(SB)/4, $0x80000000
GLOBL negzero<>(SB), RODATA|NOPTR, $64

// expmin<>: ln 2⁻¹²⁶: exp's argument is clamped here, where 2ⁿ is still normal.
DATA expmin<>+0(SB)/4, $0xc2aeac50
DATA expmin<>+4(SB)/4, $0xc2aeac50
DATA expmin<>+8(SB)/4, $0xc2aeac50
DATA expmin<>+12(SB)/4, $0xc2aeac50
DATA expmin<>+16(SB)/4, $0xc2aeac50
DATA expmin<>+20(SB)/4, $0xc2aeac50
DATA expmin<>+24(SB)/4, $0xc2aeac50
DATA expmin<>+28(SB)/4, $0xc2aeac50
DATA expmin<>+32(SB)/4, $0xc2aeac50
DATA expmin<>+36(SB)/4, $0xc2aeac50
DATA expmin<>+40(SB)/4, $0xc2aeac50
DATA expmin<>+44(SB)/4, $0xc2aeac50
DATA expmin<>+48(SB)/4, $0xc2aeac50
DATA expmin<>+52(SB)/4, $0xc2aeac50
DATA expmin<>+56(SB)/4, $0xc2aeac50
DATA expmin<>+60(SB)/4, $0xc2aeac50
GLOBL expmin<>(SB), RODATA|NOPTR, $64

// log2e<>: log₂e.
DATA log2e<>+0(SB)/4, $0x3fb8aa3b
DATA log2e<>+4(SB)/4, $0x3fb8aa3b
DATA log2e<>+8(SB)/4, $0x3fb8aa3b
DATA log2e<>+12(SB)/4, $0x3fb8aa3b
DATA log2e<>+16(SB)/4, $0x3fb8aa3b
DATA log2e<>+20(SB)/4, $0x3fb8aa3b
DATA log2e<>+24(SB)/4, $0x3fb8aa3b
DATA log2e<>+28(SB)/4, $0x3fb8aa3b
DATA log2e<>+32(SB)/4, $0x3fb8aa3b
DATA log2e<>+36(SB)/4, $0x3fb8aa3b
DATA log2e<>+40(SB)/4, $0x3fb8aa3b
DATA log2e<>+44(SB)/4, $0x3fb8aa3b
DATA log2e<>+48(SB)/4, $0x3fb8aa3b
DATA log2e<>+52(SB)/4, $0x3fb8aa3b
DATA log2e<>+56(SB)/4, $0x3fb8aa3b
DATA log2e<>+60(SB)/4, $0x3fb8aa3b
GLOBL log2e<>(SB), RODATA|NOPTR, $64

// nln2hi<>: −ln2, high part (exact in 9 bits).
DATA nln2hi<>+0(SB)/4, $0xbf318000
DATA nln2hi<>+4(SB)/4, $0xbf318000
DATA nln2hi<>+8(SB)/4, $0xbf318000
DATA nln2hi<>+12(SB)/4, $0xbf318000
DATA nln2hi<>+16(SB)/4, $0xbf318000
DATA nln2hi<>+20(SB)/4, $0xbf318000
DATA nln2hi<>+24(SB)/4, $0xbf318000
DATA nln2hi<>+28(SB)/4, $0xbf318000
DATA nln2hi<>+32(SB)/4, $0xbf318000
DATA nln2hi<>+36(SB)/4, $0xbf318000
DATA nln2hi<>+40(SB)/4, $0xbf318000
DATA nln2hi<>+44(SB)/4, $0xbf318000
DATA nln2hi<>+48(SB)/4, $0xbf318000
DATA nln2hi<>+52(SB)/4, $0xbf318000
DATA nln2hi<>+56(SB)/4, $0xbf318000
DATA nln2hi<>+60(SB)/4, $0xbf318000
GLOBL nln2hi<>(SB), RODATA|NOPTR, $64

// nln2lo<>: −ln2 − nln2hi.
DATA nln2lo<>+0(SB)/4, $0x395e8083
DATA nln2lo<>+4(SB)/4, $0x395e8083
DATA nln2lo<>+8(SB)/4, $0x395e8083
DATA nln2lo<>+12(SB)/4, $0x395e8083
DATA nln2lo<>+16(SB)/4, $0x395e8083
DATA nln2lo<>+20(SB)/4, $0x395e8083
DATA nln2lo<>+24(SB)/4, $0x395e8083
DATA nln2lo<>+28(SB)/4, $0x395e8083
DATA nln2lo<>+32(SB)/4, $0x395e8083
DATA nln2lo<>+36(SB)/4, $0x395e8083
DATA nln2lo<>+40(SB)/4, $0x395e8083
DATA nln2lo<>+44(SB)/4, $0x395e8083
DATA nln2lo<>+48(SB)/4, $0x395e8083
DATA nln2lo<>+52(SB)/4, $0x395e8083
DATA nln2lo<>+56(SB)/4, $0x395e8083
DATA nln2lo<>+60(SB)/4, $0x395e8083
GLOBL nln2lo<>(SB), RODATA|NOPTR, $64

// one<>: 1.
DATA one<>+0(SB)/4, $0x3f800000
DATA one<>+4(SB)/4, $0x3f800000
DATA one<>+8(SB)/4, $0x3f800000
DATA one<>+12(SB)/4, $0x3f800000
DATA one<>+16(SB)/4, $0x3f800000
DATA one<>+20(SB)/4, $0x3f800000
DATA one<>+24(SB)/4, $0x3f800000
DATA one<>+28(SB)/4, $0x3f800000
DATA one<>+32(SB)/4, $0x3f800000
DATA one<>+36(SB)/4, $0x3f800000
DATA one<>+40(SB)/4, $0x3f800000
DATA one<>+44(SB)/4, $0x3f800000
DATA one<>+48(SB)/4, $0x3f800000
DATA one<>+52(SB)/4, $0x3f800000
DATA one<>+56(SB)/4, $0x3f800000
DATA one<>+60(SB)/4, $0x3f800000
GLOBL one<>(SB), RODATA|NOPTR, $64

// ep0<>: Cephes expf polynomial, highest degree first.
DATA ep0<>+0(SB)/4, $0x39506967
DATA ep0<>+4(SB)/4, $0x39506967
DATA ep0<>+8(SB)/4, $0x39506967
DATA ep0<>+12(SB)/4, $0x39506967
DATA ep0<>+16(SB)/4, $0x39506967
DATA ep0<>+20(SB)/4, $0x39506967
DATA ep0<>+24(SB)/4, $0x39506967
DATA ep0<>+28(SB)/4, $0x39506967
DATA ep0<>+32(SB)/4, $0x39506967
DATA ep0<>+36(SB)/4, $0x39506967
DATA ep0<>+40(SB)/4, $0x39506967
DATA ep0<>+44(SB)/4, $0x39506967
DATA ep0<>+48(SB)/4, $0x39506967
DATA ep0<>+52(SB)/4, $0x39506967
DATA ep0<>+56(SB)/4, $0x39506967
DATA ep0<>+60(SB)/4, $0x39506967
GLOBL ep0<>(SB), RODATA|NOPTR, $64

DATA ep1<>+0(SB)/4, $0x3ab743ce
DATA ep1<>+4(SB)/4, $0x3ab743ce
DATA ep1<>+8(SB)/4, $0x3ab743ce
DATA ep1<>+12(SB)/4, $0x3ab743ce
DATA ep1<>+16(SB)/4, $0x3ab743ce
DATA ep1<>+20(SB)/4, $0x3ab743ce
DATA ep1<>+24(SB)/4, $0x3ab743ce
DATA ep1<>+28(SB)/4, $0x3ab743ce
DATA ep1<>+32(SB)/4, $0x3ab743ce
DATA ep1<>+36(SB)/4, $0x3ab743ce
DATA ep1<>+40(SB)/4, $0x3ab743ce
DATA ep1<>+44(SB)/4, $0x3ab743ce
DATA ep1<>+48(SB)/4, $0x3ab743ce
DATA ep1<>+52(SB)/4, $0x3ab743ce
DATA ep1<>+56(SB)/4, $0x3ab743ce
DATA ep1<>+60(SB)/4, $0x3ab743ce
GLOBL ep1<>(SB), RODATA|NOPTR, $64

DATA ep2<>+0(SB)/4, $0x3c088908
DATA ep2<>+4(SB)/4, $0x3c088908
DATA ep2<>+8(SB)/4, $0x3c088908
DATA ep2<>+12(SB)/4, $0x3c088908
DATA ep2<>+16(SB)/4, $0x3c088908
DATA ep2<>+20(SB)/4, $0x3c088908
DATA ep2<>+24(SB)/4, $0x3c088908
DATA ep2<>+28(SB)/4, $0x3c088908
DATA ep2<>+32(SB)/4, $0x3c088908
DATA ep2<>+36(SB)/4, $0x3c088908
DATA ep2<>+40(SB)/4, $0x3c088908
DATA ep2<>+44(SB)/4, $0x3c088908
DATA ep2<>+48(SB)/4, $0x3c088908
DATA ep2<>+52(SB)/4, $0x3c088908
DATA ep2<>+56(SB)/4, $0x3c088908
DATA ep2<>+60(SB)/4, $0x3c088908
GLOBL ep2<>(SB), RODATA|NOPTR, $64

DATA ep3<>+0(SB)/4, $0x3d2aa9c1
DATA ep3<>+4(SB)/4, $0x3d2aa9c1
DATA ep3<>+8(SB)/4, $0x3d2aa9c1
DATA ep3<>+12(SB)/4, $0x3d2aa9c1
DATA ep3<>+16(SB)/4, $0x3d2aa9c1
DATA ep3<>+20(SB)/4, $0x3d2aa9c1
DATA ep3<>+24(SB)/4, $0x3d2aa9c1
DATA ep3<>+28(SB)/4, $0x3d2aa9c1
DATA ep3<>+32(SB)/4, $0x3d2aa9c1
DATA ep3<>+36(SB)/4, $0x3d2aa9c1
DATA ep3<>+40(SB)/4, $0x3d2aa9c1
DATA ep3<>+44(SB)/4, $0x3d2aa9c1
DATA ep3<>+48(SB)/4, $0x3d2aa9c1
DATA ep3<>+52(SB)/4, $0x3d2aa9c1
DATA ep3<>+56(SB)/4, $0x3d2aa9c1
DATA ep3<>+60(SB)/4, $0x3d2aa9c1
GLOBL ep3<>(SB), RODATA|NOPTR, $64

DATA ep4<>+0(SB)/4, $0x3e2aaaaa
DATA ep4<>+4(SB)/4, $0x3e2aaaaa
DATA ep4<>+8(SB)/4, $0x3e2aaaaa
DATA ep4<>+12(SB)/4, $0x3e2aaaaa
DATA ep4<>+16(SB)/4, $0x3e2aaaaa
DATA ep4<>+20(SB)/4, $0x3e2aaaaa
DATA ep4<>+24(SB)/4, $0x3e2aaaaa
DATA ep4<>+28(SB)/4, $0x3e2aaaaa
DATA ep4<>+32(SB)/4, $0x3e2aaaaa
DATA ep4<>+36(SB)/4, $0x3e2aaaaa
DATA ep4<>+40(SB)/4, $0x3e2aaaaa
DATA ep4<>+44(SB)/4, $0x3e2aaaaa
DATA ep4<>+48(SB)/4, $0x3e2aaaaa
DATA ep4<>+52(SB)/4, $0x3e2aaaaa
DATA ep4<>+56(SB)/4, $0x3e2aaaaa
DATA ep4<>+60(SB)/4, $0x3e2aaaaa
GLOBL ep4<>(SB), RODATA|NOPTR, $64

DATA ep5<>+0(SB)/4, $0x3f000000
DATA ep5<>+4(SB)/4, $0x3f000000
DATA ep5<>+8(SB)/4, $0x3f000000
DATA ep5<>+12(SB)/4, $0x3f000000
DATA ep5<>+16(SB)/4, $0x3f000000
DATA ep5<>+20(SB)/4, $0x3f000000
DATA ep5<>+24(SB)/4, $0x3f000000
DATA ep5<>+28(SB)/4, $0x3f000000
DATA ep5<>+32(SB)/4, $0x3f000000
DATA ep5<>+36(SB)/4, $0x3f000000
DATA ep5<>+40(SB)/4, $0x3f000000
DATA ep5<>+44(SB)/4, $0x3f000000
DATA ep5<>+48(SB)/4, $0x3f000000
DATA ep5<>+52(SB)/4, $0x3f000000
DATA ep5<>+56(SB)/4, $0x3f000000
DATA ep5<>+60(SB)/4, $0x3f000000
GLOBL ep5<>(SB), RODATA|NOPTR, $64

// bias127<>: float32 exponent bias (int32).
DATA bias127<>+0(SB)/4, $0x0000007f
DATA bias127<>+4(SB)/4, $0x0000007f
DATA bias127<>+8(SB)/4, $0x0000007f
DATA bias127<>+12(SB)/4, $0x0000007f
DATA bias127<>+16(SB)/4, $0x0000007f
DATA bias127<>+20(SB)/4, $0x0000007f
DATA bias127<>+24(SB)/4, $0x0000007f
DATA bias127<>+28(SB)/4, $0x0000007f
DATA bias127<>+32(SB)/4, $0x0000007f
DATA bias127<>+36(SB)/4, $0x0000007f
DATA bias127<>+40(SB)/4, $0x0000007f
DATA bias127<>+44(SB)/4, $0x0000007f
DATA bias127<>+48(SB)/4, $0x0000007f
DATA bias127<>+52(SB)/4, $0x0000007f
DATA bias127<>+56(SB)/4, $0x0000007f
DATA bias127<>+60(SB)/4, $0x0000007f
GLOBL bias127<>(SB), RODATA|NOPTR, $64

// tailmask<>: eight all-ones lanes then eight zero lanes; the 8 lanes at byte offset
// 4·(8−r) enable the first r.
DATA tailmask<>+0(SB)/4, $0xffffffff
DATA tailmask<>+4(SB)/4, $0xffffffff
DATA tailmask<>+8(SB)/4, $0xffffffff
DATA tailmask<>+12(SB)/4, $0xffffffff
DATA tailmask<>+16(SB)/4, $0xffffffff
DATA tailmask<>+20(SB)/4, $0xffffffff
DATA tailmask<>+24(SB)/4, $0xffffffff
DATA tailmask<>+28(SB)/4, $0xffffffff
DATA tailmask<>+32(SB)/4, $0x00000000
DATA tailmask<>+36(SB)/4, $0x00000000
DATA tailmask<>+40(SB)/4, $0x00000000
DATA tailmask<>+44(SB)/4, $0x00000000
DATA tailmask<>+48(SB)/4, $0x00000000
DATA tailmask<>+52(SB)/4, $0x00000000
DATA tailmask<>+56(SB)/4, $0x00000000
DATA tailmask<>+60(SB)/4, $0x00000000
GLOBL tailmask<>(SB), RODATA|NOPTR, $64

// kmask<>: entry r (16 bits) enables the first r of 16 lanes.
DATA kmask<>+0(SB)/2, $0x0000
DATA kmask<>+2(SB)/2, $0x0001
DATA kmask<>+4(SB)/2, $0x0003
DATA kmask<>+6(SB)/2, $0x0007
DATA kmask<>+8(SB)/2, $0x000f
DATA kmask<>+10(SB)/2, $0x001f
DATA kmask<>+12(SB)/2, $0x003f
DATA kmask<>+14(SB)/2, $0x007f
DATA kmask<>+16(SB)/2, $0x00ff
DATA kmask<>+18(SB)/2, $0x01ff
DATA kmask<>+20(SB)/2, $0x03ff
DATA kmask<>+22(SB)/2, $0x07ff
DATA kmask<>+24(SB)/2, $0x0fff
DATA kmask<>+26(SB)/2, $0x1fff
DATA kmask<>+28(SB)/2, $0x3fff
DATA kmask<>+30(SB)/2, $0x7fff
GLOBL kmask<>(SB), RODATA|NOPTR, $32

// HSUM8(Y, X, T): the sum of the eight lanes of Y into the low lane of X (X is Y's low
// half); T is clobbered.
#define HSUM8(Y, X, T) VEXTRACTF128 $1, Y, T; VADDPS T, X, X; VMOVHLPS X, X, T; VADDPS T, X, X; VMOVSHDUP X, T; VADDSS T, X, X

// TAILMASK(r, t1, t2, M): M enables the first r lanes (0 < r < 8); t1, t2 are clobbered.
#define TAILMASK(r, t1, t2, M) MOVQ r, t1; NEGQ t1; LEAQ tailmask<>+32(SB), t2; VMOVUPS (t2)(t1*4), M

// DR_OUT(i, j, R): R ← &out[i·os + j]; SI clobbered.
#define DR_OUT(i, j, R) MOVQ os+24(FP), SI; IMULQ i, SI; ADDQ j, SI; MOVQ out_base+0(FP), R; LEAQ (R)(SI*4), R

// DR_ROW(base, stride, i, R): R ← &base[i·stride]; SI clobbered.
#define DR_ROW(base, stride, i, R) MOVQ stride, SI; MOVQ i, R; IMULQ SI, R; SHLQ $2, R; ADDQ base, R

// func dotAVX2(a, b []float32) float32
TEXT ·dotAVX2(SB), NOSPLIT, $0-52
	MOVQ a_base+0(FP), SI
	MOVQ a_len+8(FP), CX
	MOVQ b_base+24(FP), DI
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	XORQ AX, AX
	MOVQ CX, DX
	ANDQ $-32, DX
	JZ   dot_8

dot_32:
	VMOVUPS     (SI)(AX*4), Y4
	VMOVUPS     32(SI)(AX*4), Y5
	VMOVUPS     64(SI)(AX*4), Y6
	VMOVUPS     96(SI)(AX*4), Y7
	VFMADD231PS (DI)(AX*4), Y4, Y0
	VFMADD231PS 32(DI)(AX*4), Y5, Y1
	VFMADD231PS 64(DI)(AX*4), Y6, Y2
	VFMADD231PS 96(DI)(AX*4), Y7, Y3
	ADDQ        $32, AX
	CMPQ        AX, DX
	JLT         dot_32

dot_8:
	MOVQ CX, DX
	ANDQ $-8, DX
	CMPQ AX, DX
	JGE  dot_tail

dot_8loop:
	VMOVUPS     (SI)(AX*4), Y4
	VFMADD231PS (DI)(AX*4), Y4, Y0
	ADDQ        $8, AX
	CMPQ        AX, DX
	JLT         dot_8loop

dot_tail:
	SUBQ        AX, CX
	JZ          dot_reduce
	TAILMASK(CX, R8, R9, Y8)
	VMASKMOVPS  (SI)(AX*4), Y8, Y4
	VMASKMOVPS  (DI)(AX*4), Y8, Y5
	VFMADD231PS Y5, Y4, Y1

dot_reduce:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	HSUM8(Y0, X0, X1)
	VMOVSS X0, ret+48(FP)
	VZEROUPPER
	RET

// func scalAVX2(x []float32, alpha float32)
TEXT ·scalAVX2(SB), NOSPLIT, $0-28
	MOVQ         x_base+0(FP), DI
	MOVQ         x_len+8(FP), CX
	VBROADCASTSS alpha+24(FP), Y15
	XORQ         AX, AX
	MOVQ         CX, DX
	ANDQ         $-32, DX
	JZ           scal_8

scal_32:
	VMULPS  (DI)(AX*4), Y15, Y0
	VMULPS  32(DI)(AX*4), Y15, Y1
	VMULPS  64(DI)(AX*4), Y15, Y2
	VMULPS  96(DI)(AX*4), Y15, Y3
	VMOVUPS Y0, (DI)(AX*4)
	VMOVUPS Y1, 32(DI)(AX*4)
	VMOVUPS Y2, 64(DI)(AX*4)
	VMOVUPS Y3, 96(DI)(AX*4)
	ADDQ    $32, AX
	CMPQ    AX, DX
	JLT     scal_32

scal_8:
	MOVQ CX, DX
	ANDQ $-8, DX
	CMPQ AX, DX
	JGE  scal_tail

scal_8loop:
	VMULPS  (DI)(AX*4), Y15, Y0
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ    $8, AX
	CMPQ    AX, DX
	JLT     scal_8loop

scal_tail:
	SUBQ       AX, CX
	JZ         scal_done
	TAILMASK(CX, R8, R9, Y8)
	VMASKMOVPS (DI)(AX*4), Y8, Y0
	VMULPS     Y15, Y0, Y0
	VMASKMOVPS Y0, Y8, (DI)(AX*4)

scal_done:
	VZEROUPPER
	RET

// func scaleMulAVX2(dst, x []float32, scale float32, gain []float32)
TEXT ·scaleMulAVX2(SB), NOSPLIT, $0-80
	MOVQ         dst_base+0(FP), DI
	MOVQ         x_base+24(FP), SI
	MOVQ         x_len+32(FP), CX
	VBROADCASTSS scale+48(FP), Y15
	MOVQ         gain_base+56(FP), BX
	MOVQ         gain_len+64(FP), R10
	XORQ         AX, AX
	MOVQ         CX, DX
	ANDQ         $-8, DX
	TESTQ        R10, R10
	JZ           sm_nogain
	CMPQ         AX, DX
	JGE          sm_gtail

sm_gloop:
	VMULPS  (SI)(AX*4), Y15, Y0
	VMULPS  (BX)(AX*4), Y0, Y0
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ    $8, AX
	CMPQ    AX, DX
	JLT     sm_gloop

sm_gtail:
	SUBQ       AX, CX
	JZ         sm_done
	TAILMASK(CX, R8, R9, Y8)
	VMASKMOVPS (SI)(AX*4), Y8, Y0
	VMASKMOVPS (BX)(AX*4), Y8, Y1
	VMULPS     Y15, Y0, Y0
	VMULPS     Y1, Y0, Y0
	VMASKMOVPS Y0, Y8, (DI)(AX*4)
	JMP        sm_done

sm_nogain:
	CMPQ AX, DX
	JGE  sm_tail

sm_loop:
	VMULPS  (SI)(AX*4), Y15, Y0
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ    $8, AX
	CMPQ    AX, DX
	JLT     sm_loop

sm_tail:
	SUBQ       AX, CX
	JZ         sm_done
	TAILMASK(CX, R8, R9, Y8)
	VMASKMOVPS (SI)(AX*4), Y8, Y0
	VMULPS     Y15, Y0, Y0
	VMASKMOVPS Y0, Y8, (DI)(AX*4)

sm_done:
	VZEROUPPER
	RET

// func sumSquaresAVX2(x []float32) float64
TEXT ·sumSquaresAVX2(SB), NOSPLIT, $0-32
	MOVQ   x_base+0(FP), SI
	MOVQ   x_len+8(FP), CX
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	XORQ   AX, AX
	MOVQ   CX, DX
	ANDQ   $-16, DX
	JZ     ss_4

ss_16:
	VCVTPS2PD   (SI)(AX*4), Y4
	VCVTPS2PD   16(SI)(AX*4), Y5
	VCVTPS2PD   32(SI)(AX*4), Y6
	VCVTPS2PD   48(SI)(AX*4), Y7
	VFMADD231PD Y4, Y4, Y0
	VFMADD231PD Y5, Y5, Y1
	VFMADD231PD Y6, Y6, Y2
	VFMADD231PD Y7, Y7, Y3
	ADDQ        $16, AX
	CMPQ        AX, DX
	JLT         ss_16

ss_4:
	MOVQ CX, DX
	ANDQ $-4, DX
	CMPQ AX, DX
	JGE  ss_reduce

ss_4loop:
	VCVTPS2PD   (SI)(AX*4), Y4
	VFMADD231PD Y4, Y4, Y0
	ADDQ        $4, AX
	CMPQ        AX, DX
	JLT         ss_4loop

ss_reduce:
	VADDPD       Y1, Y0, Y0
	VADDPD       Y3, Y2, Y2
	VADDPD       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPD       X1, X0, X0
	VPERMILPD    $1, X0, X1
	VADDSD       X1, X0, X0
	CMPQ         AX, CX
	JGE          ss_done

ss_tail:
	VCVTSS2SD   (SI)(AX*4), X4, X4
	VFMADD231SD X4, X4, X0
	INCQ        AX
	CMPQ        AX, CX
	JLT         ss_tail

ss_done:
	VMOVSD X0, ret+24(FP)
	VZEROUPPER
	RET

// func f16ToF32F16C(dst []float32, src []uint16)
TEXT ·f16ToF32F16C(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ src_base+24(FP), SI
	XORQ AX, AX
	MOVQ CX, DX
	ANDQ $-32, DX
	JZ   f16_8

f16_32:
	VCVTPH2PS (SI)(AX*2), Y0
	VCVTPH2PS 16(SI)(AX*2), Y1
	VCVTPH2PS 32(SI)(AX*2), Y2
	VCVTPH2PS 48(SI)(AX*2), Y3
	VMOVUPS   Y0, (DI)(AX*4)
	VMOVUPS   Y1, 32(DI)(AX*4)
	VMOVUPS   Y2, 64(DI)(AX*4)
	VMOVUPS   Y3, 96(DI)(AX*4)
	ADDQ      $32, AX
	CMPQ      AX, DX
	JLT       f16_32

f16_8:
	MOVQ CX, DX
	ANDQ $-8, DX
	CMPQ AX, DX
	JGE  f16_tail

f16_8loop:
	VCVTPH2PS (SI)(AX*2), Y0
	VMOVUPS   Y0, (DI)(AX*4)
	ADDQ      $8, AX
	CMPQ      AX, DX
	JLT       f16_8loop

f16_tail:
	CMPQ AX, CX
	JGE  f16_done

f16_1:
	MOVWLZX   (SI)(AX*2), DX
	MOVQ      DX, X0
	VCVTPH2PS X0, X0
	VMOVSS    X0, (DI)(AX*4)
	INCQ      AX
	CMPQ      AX, CX
	JLT       f16_1

f16_done:
	VZEROUPPER
	RET

// func dotBF16AVX2(row []byte, x []float32) float32
TEXT ·dotBF16AVX2(SB), NOSPLIT, $0-52
	MOVQ   row_base+0(FP), SI
	MOVQ   x_base+24(FP), DI
	MOVQ   x_len+32(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	XORQ   AX, AX
	MOVQ   CX, DX
	ANDQ   $-32, DX
	JZ     bf_8

bf_32:
	VPMOVZXWD   (SI)(AX*2), Y4
	VPMOVZXWD   16(SI)(AX*2), Y5
	VPMOVZXWD   32(SI)(AX*2), Y6
	VPMOVZXWD   48(SI)(AX*2), Y7
	VPSLLD      $16, Y4, Y4
	VPSLLD      $16, Y5, Y5
	VPSLLD      $16, Y6, Y6
	VPSLLD      $16, Y7, Y7
	VFMADD231PS (DI)(AX*4), Y4, Y0
	VFMADD231PS 32(DI)(AX*4), Y5, Y1
	VFMADD231PS 64(DI)(AX*4), Y6, Y2
	VFMADD231PS 96(DI)(AX*4), Y7, Y3
	ADDQ        $32, AX
	CMPQ        AX, DX
	JLT         bf_32

bf_8:
	MOVQ CX, DX
	ANDQ $-8, DX
	CMPQ AX, DX
	JGE  bf_reduce

bf_8loop:
	VPMOVZXWD   (SI)(AX*2), Y4
	VPSLLD      $16, Y4, Y4
	VFMADD231PS (DI)(AX*4), Y4, Y0
	ADDQ        $8, AX
	CMPQ        AX, DX
	JLT         bf_8loop

bf_reduce:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	HSUM8(Y0, X0, X1)
	CMPQ   AX, CX
	JGE    bf_done

bf_tail:
	MOVWLZX     (SI)(AX*2), DX
	SHLL        $16, DX
	MOVQ        DX, X1
	VFMADD231SS (DI)(AX*4), X1, X0
	INCQ        AX
	CMPQ        AX, CX
	JLT         bf_tail

bf_done:
	VMOVSS X0, ret+48(FP)
	VZEROUPPER
	RET

// func scaleAddRowsAVX2(y []float32, scale float32, c, x []float32, stride int)
//
// Blocks of 64 values of y (then 8, then the rest) stay in eight registers while every
// row of x streams past.
TEXT ·scaleAddRowsAVX2(SB), NOSPLIT, $0-88
	MOVQ         y_base+0(FP), DI
	MOVQ         y_len+8(FP), CX
	VBROADCASTSS scale+24(FP), Y15
	MOVQ         c_base+32(FP), R8
	MOVQ         c_len+40(FP), R9
	MOVQ         x_base+56(FP), SI
	MOVQ         stride+80(FP), R10
	SHLQ         $2, R10
	XORQ         AX, AX

sar_64:
	MOVQ CX, DX
	SUBQ AX, DX
	CMPQ DX, $64
	JLT  sar_8
	VMULPS (DI)(AX*4), Y15, Y0
	VMULPS 32(DI)(AX*4), Y15, Y1
	VMULPS 64(DI)(AX*4), Y15, Y2
	VMULPS 96(DI)(AX*4), Y15, Y3
	VMULPS 128(DI)(AX*4), Y15, Y4
	VMULPS 160(DI)(AX*4), Y15, Y5
	VMULPS 192(DI)(AX*4), Y15, Y6
	VMULPS 224(DI)(AX*4), Y15, Y7
	LEAQ   (SI)(AX*4), R11
	MOVQ   R8, R12
	MOVQ   R9, R13
	TESTQ  R13, R13
	JZ     sar_64store

sar_64row:
	VBROADCASTSS (R12), Y8
	VFMADD231PS  (R11), Y8, Y0
	VFMADD231PS  32(R11), Y8, Y1
	VFMADD231PS  64(R11), Y8, Y2
	VFMADD231PS  96(R11), Y8, Y3
	VFMADD231PS  128(R11), Y8, Y4
	VFMADD231PS  160(R11), Y8, Y5
	VFMADD231PS  192(R11), Y8, Y6
	VFMADD231PS  224(R11), Y8, Y7
	ADDQ         $4, R12
	ADDQ         R10, R11
	DECQ         R13
	JNZ          sar_64row

sar_64store:
	VMOVUPS Y0, (DI)(AX*4)
	VMOVUPS Y1, 32(DI)(AX*4)
	VMOVUPS Y2, 64(DI)(AX*4)
	VMOVUPS Y3, 96(DI)(AX*4)
	VMOVUPS Y4, 128(DI)(AX*4)
	VMOVUPS Y5, 160(DI)(AX*4)
	VMOVUPS Y6, 192(DI)(AX*4)
	VMOVUPS Y7, 224(DI)(AX*4)
	ADDQ    $64, AX
	JMP     sar_64

sar_8:
	CMPQ   DX, $8
	JLT    sar_tail
	VMULPS (DI)(AX*4), Y15, Y0
	LEAQ   (SI)(AX*4), R11
	MOVQ   R8, R12
	MOVQ   R9, R13
	TESTQ  R13, R13
	JZ     sar_8store

sar_8row:
	VBROADCASTSS (R12), Y8
	VFMADD231PS  (R11), Y8, Y0
	ADDQ         $4, R12
	ADDQ         R10, R11
	DECQ         R13
	JNZ          sar_8row

sar_8store:
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ    $8, AX
	MOVQ    CX, DX
	SUBQ    AX, DX
	JMP     sar_8

sar_tail:
	TESTQ      DX, DX
	JZ         sar_done
	TAILMASK(DX, BX, R14, Y9)
	VMASKMOVPS (DI)(AX*4), Y9, Y0
	VMULPS     Y15, Y0, Y0
	LEAQ       (SI)(AX*4), R11
	MOVQ       R8, R12
	MOVQ       R9, R13
	TESTQ      R13, R13
	JZ         sar_tailstore

sar_tailrow:
	VBROADCASTSS (R12), Y8
	VMASKMOVPS   (R11), Y9, Y10
	VFMADD231PS  Y10, Y8, Y0
	ADDQ         $4, R12
	ADDQ         R10, R11
	DECQ         R13
	JNZ          sar_tailrow

sar_tailstore:
	VMASKMOVPS Y0, Y9, (DI)(AX*4)

sar_done:
	VZEROUPPER
	RET

// GS8ROWS(op, c) applies op(address, r) to chunk c (an element offset, AX) of the
// group's eight rows: row r at R8 + r·R9 bytes, R13 = 3·R9; BX and R14 are clobbered.
#define GS8ROWS(OP) \
	LEAQ (R8)(AX*4), BX \
	LEAQ (BX)(R9*4), R14 \
	OP((BX), 0, Y0) \
	OP((BX)(R9*1), 4, Y1) \
	OP((BX)(R9*2), 8, Y2) \
	OP((BX)(R13*1), 12, Y3) \
	OP((R14), 16, Y4) \
	OP((R14)(R9*1), 20, Y5) \
	OP((R14)(R9*2), 24, Y6) \
	OP((R14)(R13*1), 28, Y7)

// GS8DOT: pass 1 of one row and chunk: acc += row·k (k's chunk in Y8).
#define GS8DOT(addr, off, A) VFMADD231PS addr, Y8, A

// GS8UPD: pass 2 of one row and chunk: row ← decay·row + δ·k (δ broadcast in D, k's
// chunk in Y8), and acc += row·q (q's chunk in Y9).
#define GS8UPD(addr, D, A) \
	VMULPS      addr, Y15, Y10 \
	VFMADD231PS Y8, D, Y10 \
	VMOVUPS     Y10, addr \
	VFMADD231PS Y9, Y10, A

// GS8HALF(base, off, A0 … A3) runs pass 2 over the four rows at base + r·R9 (r < 4),
// their δ at off(SP), into accumulators A0 … A3: δ in registers Y11 … Y14 (the eight
// rows' δ and accumulators do not fit the sixteen registers at once).
#define GS8HALF(lbl, base, off, A0, A1, A2, A3) \
	VBROADCASTSS off(SP), Y11 \
	VBROADCASTSS off+4(SP), Y12 \
	VBROADCASTSS off+8(SP), Y13 \
	VBROADCASTSS off+12(SP), Y14 \
	XORQ         AX, AX \
lbl: \
	VMOVUPS      (SI)(AX*4), Y8 \
	VMOVUPS      (DI)(AX*4), Y9 \
	LEAQ         (base)(AX*4), BX \
	GS8UPD((BX), Y11, A0) \
	GS8UPD((BX)(R9*1), Y12, A1) \
	GS8UPD((BX)(R9*2), Y13, A2) \
	GS8UPD((BX)(R13*1), Y14, A3) \
	ADDQ         $8, AX \
	CMPQ         AX, CX \
	JLT          lbl

// GS8SUMS leaves in Y1 the eight rows' sums of their accumulators Y0 … Y7 (row r in
// lane r), each ((l0+l1)+(l2+l3)) + ((l4+l5)+(l6+l7)) over its lanes.
#define GS8SUMS \
	VHADDPS    Y1, Y0, Y0 \
	VHADDPS    Y3, Y2, Y2 \
	VHADDPS    Y5, Y4, Y4 \
	VHADDPS    Y7, Y6, Y6 \
	VHADDPS    Y2, Y0, Y0 \
	VHADDPS    Y6, Y4, Y4 \
	VPERM2F128 $0x20, Y4, Y0, Y1 \
	VPERM2F128 $0x31, Y4, Y0, Y2 \
	VADDPS     Y2, Y1, Y1

#define GS8ZERO \
	VXORPS Y0, Y0, Y0 \
	VXORPS Y1, Y1, Y1 \
	VXORPS Y2, Y2, Y2 \
	VXORPS Y3, Y3, Y3 \
	VXORPS Y4, Y4, Y4 \
	VXORPS Y5, Y5, Y5 \
	VXORPS Y6, Y6, Y6 \
	VXORPS Y7, Y7, Y7

// GS8PF prefetches, during a group's pass 1, the group GS8PFG groups on (DX walks it,
// 256 bytes a chunk of eight values, so that the d/8 chunks cover its 32·d bytes): a
// decode step's GDN layers read and write 151 MB of state (27B), past every cache, and
// the hardware prefetchers, restarting at every 64 KB head and facing eight row streams
// at once, left the step at about 60% of the memory's speed. BenchmarkGDN27BDecode
// (48 layers, 2 workers, three alternated runs on the 2-core Zen 3 VM): 10.4–14.2 ms a
// token (21–29 GB/s of state) without, 8.4–9.3 one group on, 8.3–8.4 two, 8.7–8.9
// four (34–36 GB/s, the VM's memory). Past the last group it reads the next head's
// state, which this layer's steps read anyway. -D=GS8PFG=… or -D=GS8NOPF in -asmflags
// tries another distance.
#ifndef GS8PFG
#define GS8PFG 2
#endif
#ifdef GS8NOPF
#define GS8PF
#else
#define GS8PF \
	PREFETCHT0 (DX) \
	PREFETCHT0 64(DX) \
	PREFETCHT0 128(DX) \
	PREFETCHT0 192(DX) \
	ADDQ       $256, DX
#endif

// func gdnStepAVX2(S, k, q, v, o []float32, decay, beta float32)
//
// Rows of a multiple of 8 values, 8 rows at a time (the models' heads): pass 1 runs the
// eight rows' dot products with k side by side, one accumulator a row, each k chunk
// loaded once for the eight; their sums come out as one vector (GS8SUMS), from which δ
// of the eight rows is one vector operation; pass 2 updates the rows and runs their
// dot products with q the same way. Eight independent chains hide each other's
// latency, which a row at a time (below) leaves exposed: each row's δ waits for its
// reduction, and its update for δ. A lane of a row's sums adds d/8 products in turn,
// then the tree of GS8SUMS.
//
// Other shapes, a row at a time: the dot product with k (four accumulators), δ, then
// the update and the dot product with q in a second pass while the row is in L1.
TEXT ·gdnStepAVX2(SB), NOSPLIT, $32-128
	MOVQ         S_base+0(FP), R8
	MOVQ         k_base+24(FP), SI
	MOVQ         k_len+32(FP), CX
	MOVQ         q_base+48(FP), DI
	MOVQ         v_base+72(FP), R10
	MOVQ         o_base+96(FP), R11
	MOVQ         o_len+104(FP), R12
	VBROADCASTSS decay+120(FP), Y15
	VMOVSS       beta+124(FP), X14
	TESTQ        R12, R12
	JZ           gs_done
	TESTQ        CX, CX
	JZ           gs_rows
	MOVQ         CX, AX
	ORQ          R12, AX
	TESTQ        $7, AX
	JNZ          gs_rows
	LEAQ         (CX*4), R9
	LEAQ         (R9)(R9*2), R13
	MOVQ         R9, R15
	SHLQ         $3, R15
	IMULQ        $GS8PFG, R15 // GS8PFG groups of eight rows

gs8_group:
	GS8ZERO
	XORQ AX, AX
	LEAQ (R8)(R15*1), DX // the group GS8PFG on

gs8_dot:
	GS8PF
	VMOVUPS (SI)(AX*4), Y8
	GS8ROWS(GS8DOT)
	ADDQ    $8, AX
	CMPQ    AX, CX
	JLT     gs8_dot
	GS8SUMS
	// δ = (v − decay·s)·beta for the eight rows
	VMOVUPS      (R10), Y2
	VFNMADD231PS Y15, Y1, Y2
	VBROADCASTSS beta+124(FP), Y14 // pass 2 uses Y14 for a δ
	VMULPS       Y14, Y2, Y2
	VMOVUPS      Y2, 0(SP)

	GS8ZERO
	LEAQ (R8)(R9*4), R14
	GS8HALF(gs8_upd0, R8, 0, Y0, Y1, Y2, Y3)
	GS8HALF(gs8_upd1, R14, 16, Y4, Y5, Y6, Y7)
	GS8SUMS
	VMOVUPS Y1, (R11)

	LEAQ (R8)(R9*8), R8
	ADDQ $32, R10
	ADDQ $32, R11
	SUBQ $8, R12
	JNZ  gs8_group
	JMP  gs_done

gs_rows:
	MOVQ         CX, R13
	ANDQ         $-8, R13 // whole vectors
	MOVQ         CX, DX
	SUBQ         R13, DX  // tail
	VXORPS       Y12, Y12, Y12
	TESTQ        DX, DX
	JZ           gs_row
	TAILMASK(DX, R9, BX, Y12)

gs_row:
	// Pass 1: s = row·k.
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	XORQ   AX, AX
	MOVQ   CX, DX
	ANDQ   $-32, DX
	JZ     gs_d8

gs_d32:
	VMOVUPS     (R8)(AX*4), Y4
	VMOVUPS     32(R8)(AX*4), Y5
	VMOVUPS     64(R8)(AX*4), Y6
	VMOVUPS     96(R8)(AX*4), Y7
	VFMADD231PS (SI)(AX*4), Y4, Y0
	VFMADD231PS 32(SI)(AX*4), Y5, Y1
	VFMADD231PS 64(SI)(AX*4), Y6, Y2
	VFMADD231PS 96(SI)(AX*4), Y7, Y3
	ADDQ        $32, AX
	CMPQ        AX, DX
	JLT         gs_d32

gs_d8:
	CMPQ AX, R13
	JGE  gs_dtail

gs_d8loop:
	VMOVUPS     (R8)(AX*4), Y4
	VFMADD231PS (SI)(AX*4), Y4, Y0
	ADDQ        $8, AX
	CMPQ        AX, R13
	JLT         gs_d8loop

gs_dtail:
	CMPQ        AX, CX
	JGE         gs_dreduce
	VMASKMOVPS  (R8)(AX*4), Y12, Y4
	VMASKMOVPS  (SI)(AX*4), Y12, Y5
	VFMADD231PS Y5, Y4, Y1

gs_dreduce:
	VADDPS        Y1, Y0, Y0
	VADDPS        Y3, Y2, Y2
	VADDPS        Y2, Y0, Y0
	HSUM8(Y0, X0, X1)
	// δ = (v[j] − decay·s)·beta
	VMOVSS        (R10), X2
	VFNMADD231SS  X15, X0, X2
	VMULSS        X14, X2, X2
	VBROADCASTSS  X2, Y13

	// Pass 2: row ← decay·row + δ·k, and row·q.
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	XORQ   AX, AX
	MOVQ   CX, DX
	ANDQ   $-16, DX
	JZ     gs_u8

gs_u16:
	VMULPS      (R8)(AX*4), Y15, Y4
	VMULPS      32(R8)(AX*4), Y15, Y5
	VFMADD231PS (SI)(AX*4), Y13, Y4
	VFMADD231PS 32(SI)(AX*4), Y13, Y5
	VMOVUPS     Y4, (R8)(AX*4)
	VMOVUPS     Y5, 32(R8)(AX*4)
	VFMADD231PS (DI)(AX*4), Y4, Y0
	VFMADD231PS 32(DI)(AX*4), Y5, Y1
	ADDQ        $16, AX
	CMPQ        AX, DX
	JLT         gs_u16

gs_u8:
	CMPQ AX, R13
	JGE  gs_utail
	VMULPS      (R8)(AX*4), Y15, Y4
	VFMADD231PS (SI)(AX*4), Y13, Y4
	VMOVUPS     Y4, (R8)(AX*4)
	VFMADD231PS (DI)(AX*4), Y4, Y2
	ADDQ        $8, AX

gs_utail:
	CMPQ        AX, CX
	JGE         gs_ureduce
	VMASKMOVPS  (R8)(AX*4), Y12, Y4
	VMASKMOVPS  (SI)(AX*4), Y12, Y5
	VMASKMOVPS  (DI)(AX*4), Y12, Y6
	VMULPS      Y15, Y4, Y4
	VFMADD231PS Y5, Y13, Y4
	VMASKMOVPS  Y4, Y12, (R8)(AX*4)
	VFMADD231PS Y6, Y4, Y3

gs_ureduce:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	HSUM8(Y0, X0, X1)
	VMOVSS X0, (R11)

	LEAQ (R8)(CX*4), R8
	ADDQ $4, R10
	ADDQ $4, R11
	DECQ R12
	JNZ  gs_row

gs_done:
	VZEROUPPER
	RET

// SIGMOID8CORE(G): Y5 ← σ(G) for the 8 lanes of G: σ(g) = 1/(1+e) for g ≥ 0 and
// e·(1/(1+e)) for g < 0, where e = exp(−|g|), clamped at ln 2⁻¹²⁶ so that it never
// overflows nor leaves the normal range. exp is Cephes' expf: n = round(a·log₂e),
// r = a − n·ln2 in two parts, e = 2ⁿ·(1 + r + r²·p(r)). Clobbers Y1-Y7.
#define SIGMOID8CORE(G) \
	VORPS        negzero<>(SB), G, Y1 \
	VMAXPS       expmin<>(SB), Y1, Y1 \
	VMULPS       log2e<>(SB), Y1, Y2 \
	VROUNDPS     $0, Y2, Y2 \
	VFMADD231PS  nln2hi<>(SB), Y2, Y1 \
	VFMADD231PS  nln2lo<>(SB), Y2, Y1 \
	VMOVUPS      ep0<>(SB), Y3 \
	VFMADD213PS  ep1<>(SB), Y1, Y3 \
	VFMADD213PS  ep2<>(SB), Y1, Y3 \
	VFMADD213PS  ep3<>(SB), Y1, Y3 \
	VFMADD213PS  ep4<>(SB), Y1, Y3 \
	VFMADD213PS  ep5<>(SB), Y1, Y3 \
	VMULPS       Y1, Y1, Y4 \
	VFMADD213PS  Y1, Y4, Y3 \
	VADDPS       one<>(SB), Y3, Y3 \
	VCVTPS2DQ    Y2, Y2 \
	VPADDD       bias127<>(SB), Y2, Y2 \
	VPSLLD       $23, Y2, Y2 \
	VMULPS       Y2, Y3, Y3 \
	VADDPS       one<>(SB), Y3, Y4 \
	VMOVUPS      one<>(SB), Y5 \
	VDIVPS       Y4, Y5, Y5 \
	VMULPS       Y5, Y3, Y6 \
	VBLENDVPS    G, Y6, Y5, Y5

// SILU8CORE(G): Y0 ← silu(G) = G·σ(G) for the 8 lanes of G. Clobbers Y1-Y7.
#define SILU8CORE(G) \
	SIGMOID8CORE(G) \
	VMULPS Y5, G, Y0

// GATENAN(G, R) sets the lanes of R whose G is NaN to a NaN: SIGMOID8CORE's clamp
// (VMAXPS) returns its bound for a NaN, where the SiLU's last product restores it.
// Clobbers Y12.
#define GATENAN(G, R) \
	VCMPPS $3, G, G, Y12 \
	VORPS  Y12, R, R

// func gateMulAVX2(dst, g, u []float32, s float32)
TEXT ·gateMulAVX2(SB), NOSPLIT, $0-76
	MOVQ         dst_base+0(FP), DI
	MOVQ         dst_len+8(FP), CX
	MOVQ         g_base+24(FP), SI
	MOVQ         u_base+48(FP), BX
	VBROADCASTSS s+72(FP), Y11
	XORQ         AX, AX
	MOVQ         CX, DX
	ANDQ         $-8, DX
	CMPQ         AX, DX
	JGE          gate_tail

gate_loop:
	VMOVUPS (SI)(AX*4), Y8
	SIGMOID8CORE(Y8)
	VMULPS  (BX)(AX*4), Y11, Y9
	VMULPS  Y5, Y9, Y0
	GATENAN(Y8, Y0)
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ    $8, AX
	CMPQ    AX, DX
	JLT     gate_loop

gate_tail:
	SUBQ       AX, CX
	JZ         gate_done
	TAILMASK(CX, R8, R9, Y10)
	VMASKMOVPS (SI)(AX*4), Y10, Y8
	VMASKMOVPS (BX)(AX*4), Y10, Y12
	SIGMOID8CORE(Y8)
	VMULPS     Y12, Y11, Y9
	VMULPS     Y5, Y9, Y0
	GATENAN(Y8, Y0)
	VMASKMOVPS Y0, Y10, (DI)(AX*4)

gate_done:
	VZEROUPPER
	RET

// func siluMulAVX2(dst, g, u []float32)
TEXT ·siluMulAVX2(SB), NOSPLIT, $0-72
	MOVQ  dst_base+0(FP), DI
	MOVQ  dst_len+8(FP), CX
	MOVQ  g_base+24(FP), SI
	MOVQ  u_base+48(FP), BX
	MOVQ  u_len+56(FP), R10
	XORQ  AX, AX
	MOVQ  CX, DX
	ANDQ  $-8, DX
	TESTQ R10, R10
	JZ    silu_nou
	CMPQ  AX, DX
	JGE   silu_utail

silu_uloop:
	VMOVUPS (SI)(AX*4), Y8
	SILU8CORE(Y8)
	VMULPS  (BX)(AX*4), Y0, Y0
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ    $8, AX
	CMPQ    AX, DX
	JLT     silu_uloop

silu_utail:
	SUBQ       AX, CX
	JZ         silu_done
	TAILMASK(CX, R8, R9, Y9)
	VMASKMOVPS (SI)(AX*4), Y9, Y8
	VMASKMOVPS (BX)(AX*4), Y9, Y10
	SILU8CORE(Y8)
	VMULPS     Y10, Y0, Y0
	VMASKMOVPS Y0, Y9, (DI)(AX*4)
	JMP        silu_done

silu_nou:
	CMPQ AX, DX
	JGE  silu_tail

silu_loop:
	VMOVUPS (SI)(AX*4), Y8
	SILU8CORE(Y8)
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ    $8, AX
	CMPQ    AX, DX
	JLT     silu_loop

silu_tail:
	SUBQ       AX, CX
	JZ         silu_done
	TAILMASK(CX, R8, R9, Y9)
	VMASKMOVPS (SI)(AX*4), Y9, Y8
	SILU8CORE(Y8)
	VMASKMOVPS Y0, Y9, (DI)(AX*4)

silu_done:
	VZEROUPPER
	RET

// func dotRowsAVX2(out []float32, os int, a []float32, as, na int, b []float32, bs, nb, d int)
//
// Blocks of 2 rows of a × 4 rows of b, eight accumulators, each load feeding two or four
// multiply-adds; the eight sums are reduced together by horizontal adds. Leftover rows
// go 1 × 4, leftover columns 1 × 1. Register use: CX = d rounded down to 8, DX = d,
// Y15 = mask of the last d mod 8 lanes, BX = i, R14 = j, R8/R9 = rows of a,
// R10-R13 = rows of b, AX = position in the rows.
TEXT ·dotRowsAVX2(SB), NOSPLIT, $0-120
	MOVQ   d+112(FP), DX
	MOVQ   DX, CX
	ANDQ   $-8, CX
	VXORPS Y15, Y15, Y15
	MOVQ   DX, SI
	SUBQ   CX, SI
	JZ     dr_start
	TAILMASK(SI, DI, R8, Y15)

dr_start:
	XORQ BX, BX

dr_i2:
	MOVQ na+64(FP), SI
	SUBQ BX, SI
	CMPQ SI, $2
	JLT  dr_i1
	DR_ROW(a_base+32(FP), as+56(FP), BX, R8)
	LEAQ (R8)(SI*4), R9
	XORQ R14, R14

dr_j4:
	MOVQ nb+104(FP), SI
	SUBQ R14, SI
	CMPQ SI, $4
	JLT  dr_j1
	DR_ROW(b_base+72(FP), bs+96(FP), R14, R10)
	LEAQ   (R10)(SI*4), R11
	LEAQ   (R11)(SI*4), R12
	LEAQ   (R12)(SI*4), R13
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	XORQ   AX, AX
	CMPQ   AX, CX
	JGE    dr24_tail

dr24_loop:
	VMOVUPS     (R8)(AX*4), Y8
	VMOVUPS     (R9)(AX*4), Y9
	VMOVUPS     (R10)(AX*4), Y10
	VFMADD231PS Y10, Y8, Y0
	VFMADD231PS Y10, Y9, Y4
	VMOVUPS     (R11)(AX*4), Y11
	VFMADD231PS Y11, Y8, Y1
	VFMADD231PS Y11, Y9, Y5
	VMOVUPS     (R12)(AX*4), Y12
	VFMADD231PS Y12, Y8, Y2
	VFMADD231PS Y12, Y9, Y6
	VMOVUPS     (R13)(AX*4), Y13
	VFMADD231PS Y13, Y8, Y3
	VFMADD231PS Y13, Y9, Y7
	ADDQ        $8, AX
	CMPQ        AX, CX
	JLT         dr24_loop

dr24_tail:
	CMPQ        AX, DX
	JGE         dr24_reduce
	VMASKMOVPS  (R8)(AX*4), Y15, Y8
	VMASKMOVPS  (R9)(AX*4), Y15, Y9
	VMASKMOVPS  (R10)(AX*4), Y15, Y10
	VFMADD231PS Y10, Y8, Y0
	VFMADD231PS Y10, Y9, Y4
	VMASKMOVPS  (R11)(AX*4), Y15, Y11
	VFMADD231PS Y11, Y8, Y1
	VFMADD231PS Y11, Y9, Y5
	VMASKMOVPS  (R12)(AX*4), Y15, Y12
	VFMADD231PS Y12, Y8, Y2
	VFMADD231PS Y12, Y9, Y6
	VMASKMOVPS  (R13)(AX*4), Y15, Y13
	VFMADD231PS Y13, Y8, Y3
	VFMADD231PS Y13, Y9, Y7

dr24_reduce:
	VHADDPS      Y1, Y0, Y0
	VHADDPS      Y3, Y2, Y2
	VHADDPS      Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      Y5, Y4, Y4
	VHADDPS      Y7, Y6, Y6
	VHADDPS      Y6, Y4, Y4
	VEXTRACTF128 $1, Y4, X5
	VADDPS       X5, X4, X4
	DR_OUT(BX, R14, DI)
	VMOVUPS      X0, (DI)
	MOVQ         os+24(FP), SI
	VMOVUPS      X4, (DI)(SI*4)
	ADDQ         $4, R14
	JMP          dr_j4

dr_j1:
	CMPQ R14, nb+104(FP)
	JGE  dr_i2next
	DR_ROW(b_base+72(FP), bs+96(FP), R14, R10)
	VXORPS Y0, Y0, Y0
	VXORPS Y4, Y4, Y4
	XORQ   AX, AX
	CMPQ   AX, CX
	JGE    dr21_tail

dr21_loop:
	VMOVUPS     (R10)(AX*4), Y10
	VFMADD231PS (R8)(AX*4), Y10, Y0
	VFMADD231PS (R9)(AX*4), Y10, Y4
	ADDQ        $8, AX
	CMPQ        AX, CX
	JLT         dr21_loop

dr21_tail:
	CMPQ        AX, DX
	JGE         dr21_reduce
	VMASKMOVPS  (R8)(AX*4), Y15, Y8
	VMASKMOVPS  (R9)(AX*4), Y15, Y9
	VMASKMOVPS  (R10)(AX*4), Y15, Y10
	VFMADD231PS Y10, Y8, Y0
	VFMADD231PS Y10, Y9, Y4

dr21_reduce:
	HSUM8(Y0, X0, X1)
	HSUM8(Y4, X4, X5)
	DR_OUT(BX, R14, DI)
	VMOVSS X0, (DI)
	MOVQ   os+24(FP), SI
	VMOVSS X4, (DI)(SI*4)
	INCQ   R14
	JMP    dr_j1

dr_i2next:
	ADDQ $2, BX
	JMP  dr_i2

dr_i1:
	CMPQ BX, na+64(FP)
	JGE  dr_done
	DR_ROW(a_base+32(FP), as+56(FP), BX, R8)
	XORQ R14, R14

dr_j4s:
	MOVQ nb+104(FP), SI
	SUBQ R14, SI
	CMPQ SI, $4
	JLT  dr_j1s
	DR_ROW(b_base+72(FP), bs+96(FP), R14, R10)
	LEAQ   (R10)(SI*4), R11
	LEAQ   (R11)(SI*4), R12
	LEAQ   (R12)(SI*4), R13
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	XORQ   AX, AX
	CMPQ   AX, CX
	JGE    dr14_tail

dr14_loop:
	VMOVUPS     (R8)(AX*4), Y8
	VFMADD231PS (R10)(AX*4), Y8, Y0
	VFMADD231PS (R11)(AX*4), Y8, Y1
	VFMADD231PS (R12)(AX*4), Y8, Y2
	VFMADD231PS (R13)(AX*4), Y8, Y3
	ADDQ        $8, AX
	CMPQ        AX, CX
	JLT         dr14_loop

dr14_tail:
	CMPQ        AX, DX
	JGE         dr14_reduce
	VMASKMOVPS  (R8)(AX*4), Y15, Y8
	VMASKMOVPS  (R10)(AX*4), Y15, Y10
	VFMADD231PS Y10, Y8, Y0
	VMASKMOVPS  (R11)(AX*4), Y15, Y11
	VFMADD231PS Y11, Y8, Y1
	VMASKMOVPS  (R12)(AX*4), Y15, Y12
	VFMADD231PS Y12, Y8, Y2
	VMASKMOVPS  (R13)(AX*4), Y15, Y13
	VFMADD231PS Y13, Y8, Y3

dr14_reduce:
	VHADDPS      Y1, Y0, Y0
	VHADDPS      Y3, Y2, Y2
	VHADDPS      Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	DR_OUT(BX, R14, DI)
	VMOVUPS      X0, (DI)
	ADDQ         $4, R14
	JMP          dr_j4s

dr_j1s:
	CMPQ R14, nb+104(FP)
	JGE  dr_done
	DR_ROW(b_base+72(FP), bs+96(FP), R14, R10)
	VXORPS Y0, Y0, Y0
	XORQ   AX, AX
	CMPQ   AX, CX
	JGE    dr11_tail

dr11_loop:
	VMOVUPS     (R10)(AX*4), Y10
	VFMADD231PS (R8)(AX*4), Y10, Y0
	ADDQ        $8, AX
	CMPQ        AX, CX
	JLT         dr11_loop

dr11_tail:
	CMPQ        AX, DX
	JGE         dr11_reduce
	VMASKMOVPS  (R8)(AX*4), Y15, Y8
	VMASKMOVPS  (R10)(AX*4), Y15, Y10
	VFMADD231PS Y10, Y8, Y0

dr11_reduce:
	HSUM8(Y0, X0, X1)
	DR_OUT(BX, R14, DI)
	VMOVSS X0, (DI)
	INCQ   R14
	JMP    dr_j1s

dr_done:
	VZEROUPPER
	RET

// AVX-512 (F) kernels: 16-float vectors, tails through a lane mask in K1.

// KTAIL(r, t, K): K enables the first r lanes (r < 16); t clobbered.
#define KTAIL(r, t, K) LEAQ kmask<>(SB), t; KMOVW (t)(r*2), K

// HSUM16(Z, Y, X, T): the sum of the 16 lanes of Z into the low lane of X (Y, X its low
// halves); T (an X register) clobbered.
#define HSUM16(Z, Y, X, TY, TX) VEXTRACTF64X4 $1, Z, TY; VADDPS TY, Y, Y; HSUM8(Y, X, TX)

// RED4Z(c0, c1, c2, c3): the sums of c0…c3 into the four lanes of X8, in order;
// Z8-Z11 clobbered.
#define RED4Z(c0, c1, c2, c3) \
	VSHUFF32X4 $0x44, c1, c0, Z8 \
	VSHUFF32X4 $0xEE, c1, c0, Z9 \
	VADDPS     Z9, Z8, Z8 \
	VSHUFF32X4 $0x44, c3, c2, Z10 \
	VSHUFF32X4 $0xEE, c3, c2, Z11 \
	VADDPS     Z11, Z10, Z10 \
	VSHUFF32X4 $0x88, Z10, Z8, Z9 \
	VSHUFF32X4 $0xDD, Z10, Z8, Z11 \
	VADDPS     Z11, Z9, Z8 \
	VEXTRACTF32X4 $1, Z8, X9 \
	VEXTRACTF32X4 $2, Z8, X10 \
	VEXTRACTF32X4 $3, Z8, X11 \
	VHADDPS    X9, X8, X8 \
	VHADDPS    X11, X10, X10 \
	VHADDPS    X10, X8, X8

// func dotAVX512(a, b []float32) float32
TEXT ·dotAVX512(SB), NOSPLIT, $0-52
	MOVQ   a_base+0(FP), SI
	MOVQ   a_len+8(FP), CX
	MOVQ   b_base+24(FP), DI
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	XORQ   AX, AX
	MOVQ   CX, DX
	ANDQ   $-64, DX
	JZ     dz_16

dz_64:
	VMOVUPS     (SI)(AX*4), Z4
	VMOVUPS     64(SI)(AX*4), Z5
	VMOVUPS     128(SI)(AX*4), Z6
	VMOVUPS     192(SI)(AX*4), Z7
	VFMADD231PS (DI)(AX*4), Z4, Z0
	VFMADD231PS 64(DI)(AX*4), Z5, Z1
	VFMADD231PS 128(DI)(AX*4), Z6, Z2
	VFMADD231PS 192(DI)(AX*4), Z7, Z3
	ADDQ        $64, AX
	CMPQ        AX, DX
	JLT         dz_64

dz_16:
	MOVQ CX, DX
	ANDQ $-16, DX
	CMPQ AX, DX
	JGE  dz_tail

dz_16loop:
	VMOVUPS     (SI)(AX*4), Z4
	VFMADD231PS (DI)(AX*4), Z4, Z0
	ADDQ        $16, AX
	CMPQ        AX, DX
	JLT         dz_16loop

dz_tail:
	SUBQ        AX, CX
	JZ          dz_reduce
	KTAIL(CX, R8, K1)
	VMOVUPS.Z   (SI)(AX*4), K1, Z4
	VMOVUPS.Z   (DI)(AX*4), K1, Z5
	VFMADD231PS Z5, Z4, Z1

dz_reduce:
	VADDPS Z1, Z0, Z0
	VADDPS Z3, Z2, Z2
	VADDPS Z2, Z0, Z0
	HSUM16(Z0, Y0, X0, Y1, X1)
	VMOVSS X0, ret+48(FP)
	VZEROUPPER
	RET

// func dotRowsAVX512(out []float32, os int, a []float32, as, na int, b []float32, bs, nb, d int)
//
// dotRowsAVX2 with 16-float vectors: CX = d rounded down to 16, K1 = mask of the rest.
TEXT ·dotRowsAVX512(SB), NOSPLIT, $0-120
	MOVQ d+112(FP), DX
	MOVQ DX, CX
	ANDQ $-16, CX
	MOVQ DX, SI
	SUBQ CX, SI
	KTAIL(SI, DI, K1)
	XORQ BX, BX

dz_i2:
	MOVQ na+64(FP), SI
	SUBQ BX, SI
	CMPQ SI, $2
	JLT  dz_i1
	DR_ROW(a_base+32(FP), as+56(FP), BX, R8)
	LEAQ (R8)(SI*4), R9
	XORQ R14, R14

dz_j4:
	MOVQ nb+104(FP), SI
	SUBQ R14, SI
	CMPQ SI, $4
	JLT  dz_j1
	DR_ROW(b_base+72(FP), bs+96(FP), R14, R10)
	LEAQ   (R10)(SI*4), R11
	LEAQ   (R11)(SI*4), R12
	LEAQ   (R12)(SI*4), R13
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	XORQ   AX, AX
	CMPQ   AX, CX
	JGE    dz24_tail

dz24_loop:
	VMOVUPS     (R8)(AX*4), Z8
	VMOVUPS     (R9)(AX*4), Z9
	VMOVUPS     (R10)(AX*4), Z10
	VFMADD231PS Z10, Z8, Z0
	VFMADD231PS Z10, Z9, Z4
	VMOVUPS     (R11)(AX*4), Z11
	VFMADD231PS Z11, Z8, Z1
	VFMADD231PS Z11, Z9, Z5
	VMOVUPS     (R12)(AX*4), Z12
	VFMADD231PS Z12, Z8, Z2
	VFMADD231PS Z12, Z9, Z6
	VMOVUPS     (R13)(AX*4), Z13
	VFMADD231PS Z13, Z8, Z3
	VFMADD231PS Z13, Z9, Z7
	ADDQ        $16, AX
	CMPQ        AX, CX
	JLT         dz24_loop

dz24_tail:
	CMPQ        AX, DX
	JGE         dz24_reduce
	VMOVUPS.Z   (R8)(AX*4), K1, Z8
	VMOVUPS.Z   (R9)(AX*4), K1, Z9
	VMOVUPS.Z   (R10)(AX*4), K1, Z10
	VFMADD231PS Z10, Z8, Z0
	VFMADD231PS Z10, Z9, Z4
	VMOVUPS.Z   (R11)(AX*4), K1, Z11
	VFMADD231PS Z11, Z8, Z1
	VFMADD231PS Z11, Z9, Z5
	VMOVUPS.Z   (R12)(AX*4), K1, Z12
	VFMADD231PS Z12, Z8, Z2
	VFMADD231PS Z12, Z9, Z6
	VMOVUPS.Z   (R13)(AX*4), K1, Z13
	VFMADD231PS Z13, Z8, Z3
	VFMADD231PS Z13, Z9, Z7

dz24_reduce:
	RED4Z(Z0, Z1, Z2, Z3)
	DR_OUT(BX, R14, DI)
	VMOVUPS X8, (DI)
	RED4Z(Z4, Z5, Z6, Z7)
	MOVQ    os+24(FP), SI
	VMOVUPS X8, (DI)(SI*4)
	ADDQ    $4, R14
	JMP     dz_j4

dz_j1:
	CMPQ R14, nb+104(FP)
	JGE  dz_i2next
	DR_ROW(b_base+72(FP), bs+96(FP), R14, R10)
	VPXORD Z0, Z0, Z0
	VPXORD Z4, Z4, Z4
	XORQ   AX, AX
	CMPQ   AX, CX
	JGE    dz21_tail

dz21_loop:
	VMOVUPS     (R10)(AX*4), Z10
	VFMADD231PS (R8)(AX*4), Z10, Z0
	VFMADD231PS (R9)(AX*4), Z10, Z4
	ADDQ        $16, AX
	CMPQ        AX, CX
	JLT         dz21_loop

dz21_tail:
	CMPQ        AX, DX
	JGE         dz21_reduce
	VMOVUPS.Z   (R8)(AX*4), K1, Z8
	VMOVUPS.Z   (R9)(AX*4), K1, Z9
	VMOVUPS.Z   (R10)(AX*4), K1, Z10
	VFMADD231PS Z10, Z8, Z0
	VFMADD231PS Z10, Z9, Z4

dz21_reduce:
	HSUM16(Z0, Y0, X0, Y1, X1)
	HSUM16(Z4, Y4, X4, Y5, X5)
	DR_OUT(BX, R14, DI)
	VMOVSS X0, (DI)
	MOVQ   os+24(FP), SI
	VMOVSS X4, (DI)(SI*4)
	INCQ   R14
	JMP    dz_j1

dz_i2next:
	ADDQ $2, BX
	JMP  dz_i2

dz_i1:
	CMPQ BX, na+64(FP)
	JGE  dz_done
	DR_ROW(a_base+32(FP), as+56(FP), BX, R8)
	XORQ R14, R14

dz_j4s:
	MOVQ nb+104(FP), SI
	SUBQ R14, SI
	CMPQ SI, $4
	JLT  dz_j1s
	DR_ROW(b_base+72(FP), bs+96(FP), R14, R10)
	LEAQ   (R10)(SI*4), R11
	LEAQ   (R11)(SI*4), R12
	LEAQ   (R12)(SI*4), R13
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	XORQ   AX, AX
	CMPQ   AX, CX
	JGE    dz14_tail

dz14_loop:
	VMOVUPS     (R8)(AX*4), Z8
	VFMADD231PS (R10)(AX*4), Z8, Z0
	VFMADD231PS (R11)(AX*4), Z8, Z1
	VFMADD231PS (R12)(AX*4), Z8, Z2
	VFMADD231PS (R13)(AX*4), Z8, Z3
	ADDQ        $16, AX
	CMPQ        AX, CX
	JLT         dz14_loop

dz14_tail:
	CMPQ        AX, DX
	JGE         dz14_reduce
	VMOVUPS.Z   (R8)(AX*4), K1, Z8
	VMOVUPS.Z   (R10)(AX*4), K1, Z10
	VFMADD231PS Z10, Z8, Z0
	VMOVUPS.Z   (R11)(AX*4), K1, Z11
	VFMADD231PS Z11, Z8, Z1
	VMOVUPS.Z   (R12)(AX*4), K1, Z12
	VFMADD231PS Z12, Z8, Z2
	VMOVUPS.Z   (R13)(AX*4), K1, Z13
	VFMADD231PS Z13, Z8, Z3

dz14_reduce:
	RED4Z(Z0, Z1, Z2, Z3)
	DR_OUT(BX, R14, DI)
	VMOVUPS X8, (DI)
	ADDQ    $4, R14
	JMP     dz_j4s

dz_j1s:
	CMPQ R14, nb+104(FP)
	JGE  dz_done
	DR_ROW(b_base+72(FP), bs+96(FP), R14, R10)
	VPXORD Z0, Z0, Z0
	XORQ   AX, AX
	CMPQ   AX, CX
	JGE    dz11_tail

dz11_loop:
	VMOVUPS     (R10)(AX*4), Z10
	VFMADD231PS (R8)(AX*4), Z10, Z0
	ADDQ        $16, AX
	CMPQ        AX, CX
	JLT         dz11_loop

dz11_tail:
	CMPQ        AX, DX
	JGE         dz11_reduce
	VMOVUPS.Z   (R8)(AX*4), K1, Z8
	VMOVUPS.Z   (R10)(AX*4), K1, Z10
	VFMADD231PS Z10, Z8, Z0

dz11_reduce:
	HSUM16(Z0, Y0, X0, Y1, X1)
	DR_OUT(BX, R14, DI)
	VMOVSS X0, (DI)
	INCQ   R14
	JMP    dz_j1s

dz_done:
	VZEROUPPER
	RET

// func scaleAddRowsAVX512(y []float32, scale float32, c, x []float32, stride int)
//
// Blocks of 128 values of y (then 16, then the rest under a mask) in eight registers.
TEXT ·scaleAddRowsAVX512(SB), NOSPLIT, $0-88
	MOVQ         y_base+0(FP), DI
	MOVQ         y_len+8(FP), CX
	VBROADCASTSS scale+24(FP), Z15
	MOVQ         c_base+32(FP), R8
	MOVQ         c_len+40(FP), R9
	MOVQ         x_base+56(FP), SI
	MOVQ         stride+80(FP), R10
	SHLQ         $2, R10
	XORQ         AX, AX

sz_128:
	MOVQ   CX, DX
	SUBQ   AX, DX
	CMPQ   DX, $128
	JLT    sz_16
	VMULPS (DI)(AX*4), Z15, Z0
	VMULPS 64(DI)(AX*4), Z15, Z1
	VMULPS 128(DI)(AX*4), Z15, Z2
	VMULPS 192(DI)(AX*4), Z15, Z3
	VMULPS 256(DI)(AX*4), Z15, Z4
	VMULPS 320(DI)(AX*4), Z15, Z5
	VMULPS 384(DI)(AX*4), Z15, Z6
	VMULPS 448(DI)(AX*4), Z15, Z7
	LEAQ   (SI)(AX*4), R11
	MOVQ   R8, R12
	MOVQ   R9, R13
	TESTQ  R13, R13
	JZ     sz_128store

sz_128row:
	VBROADCASTSS (R12), Z8
	VFMADD231PS  (R11), Z8, Z0
	VFMADD231PS  64(R11), Z8, Z1
	VFMADD231PS  128(R11), Z8, Z2
	VFMADD231PS  192(R11), Z8, Z3
	VFMADD231PS  256(R11), Z8, Z4
	VFMADD231PS  320(R11), Z8, Z5
	VFMADD231PS  384(R11), Z8, Z6
	VFMADD231PS  448(R11), Z8, Z7
	ADDQ         $4, R12
	ADDQ         R10, R11
	DECQ         R13
	JNZ          sz_128row

sz_128store:
	VMOVUPS Z0, (DI)(AX*4)
	VMOVUPS Z1, 64(DI)(AX*4)
	VMOVUPS Z2, 128(DI)(AX*4)
	VMOVUPS Z3, 192(DI)(AX*4)
	VMOVUPS Z4, 256(DI)(AX*4)
	VMOVUPS Z5, 320(DI)(AX*4)
	VMOVUPS Z6, 384(DI)(AX*4)
	VMOVUPS Z7, 448(DI)(AX*4)
	ADDQ    $128, AX
	JMP     sz_128

sz_16:
	CMPQ   DX, $16
	JLT    sz_tail
	VMULPS (DI)(AX*4), Z15, Z0
	LEAQ   (SI)(AX*4), R11
	MOVQ   R8, R12
	MOVQ   R9, R13
	TESTQ  R13, R13
	JZ     sz_16store

sz_16row:
	VBROADCASTSS (R12), Z8
	VFMADD231PS  (R11), Z8, Z0
	ADDQ         $4, R12
	ADDQ         R10, R11
	DECQ         R13
	JNZ          sz_16row

sz_16store:
	VMOVUPS Z0, (DI)(AX*4)
	ADDQ    $16, AX
	MOVQ    CX, DX
	SUBQ    AX, DX
	JMP     sz_16

sz_tail:
	TESTQ     DX, DX
	JZ        sz_done
	KTAIL(DX, BX, K1)
	VMOVUPS.Z (DI)(AX*4), K1, Z0
	VMULPS    Z15, Z0, Z0
	LEAQ      (SI)(AX*4), R11
	MOVQ      R8, R12
	MOVQ      R9, R13
	TESTQ     R13, R13
	JZ        sz_tailstore

sz_tailrow:
	VBROADCASTSS (R12), Z8
	VMOVUPS.Z    (R11), K1, Z9
	VFMADD231PS  Z9, Z8, Z0
	ADDQ         $4, R12
	ADDQ         R10, R11
	DECQ         R13
	JNZ          sz_tailrow

sz_tailstore:
	VMOVUPS Z0, K1, (DI)(AX*4)

sz_done:
	VZEROUPPER
	RET

// func gdnStepAVX512(S, k, q, v, o []float32, decay, beta float32)
TEXT ·gdnStepAVX512(SB), NOSPLIT, $0-128
	MOVQ         S_base+0(FP), R8
	MOVQ         k_base+24(FP), SI
	MOVQ         k_len+32(FP), CX
	MOVQ         q_base+48(FP), DI
	MOVQ         v_base+72(FP), R10
	MOVQ         o_base+96(FP), R11
	MOVQ         o_len+104(FP), R12
	VBROADCASTSS decay+120(FP), Z15
	VMOVSS       beta+124(FP), X14
	TESTQ        R12, R12
	JZ           gz_done
	MOVQ         CX, R13
	ANDQ         $-16, R13 // whole vectors
	MOVQ         CX, DX
	SUBQ         R13, DX
	KTAIL(DX, R9, K1)

gz_row:
	// Pass 1: s = row·k.
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	XORQ   AX, AX
	MOVQ   CX, DX
	ANDQ   $-64, DX
	JZ     gz_d16

gz_d64:
	VMOVUPS     (R8)(AX*4), Z4
	VMOVUPS     64(R8)(AX*4), Z5
	VMOVUPS     128(R8)(AX*4), Z6
	VMOVUPS     192(R8)(AX*4), Z7
	VFMADD231PS (SI)(AX*4), Z4, Z0
	VFMADD231PS 64(SI)(AX*4), Z5, Z1
	VFMADD231PS 128(SI)(AX*4), Z6, Z2
	VFMADD231PS 192(SI)(AX*4), Z7, Z3
	ADDQ        $64, AX
	CMPQ        AX, DX
	JLT         gz_d64

gz_d16:
	CMPQ AX, R13
	JGE  gz_dtail

gz_d16loop:
	VMOVUPS     (R8)(AX*4), Z4
	VFMADD231PS (SI)(AX*4), Z4, Z0
	ADDQ        $16, AX
	CMPQ        AX, R13
	JLT         gz_d16loop

gz_dtail:
	CMPQ        AX, CX
	JGE         gz_dreduce
	VMOVUPS.Z   (R8)(AX*4), K1, Z4
	VMOVUPS.Z   (SI)(AX*4), K1, Z5
	VFMADD231PS Z5, Z4, Z1

gz_dreduce:
	VADDPS       Z1, Z0, Z0
	VADDPS       Z3, Z2, Z2
	VADDPS       Z2, Z0, Z0
	HSUM16(Z0, Y0, X0, Y1, X1)
	VMOVSS       (R10), X2
	VFNMADD231SS X15, X0, X2
	VMULSS       X14, X2, X2
	VBROADCASTSS X2, Z13

	// Pass 2: row ← decay·row + δ·k, and row·q.
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	XORQ   AX, AX
	MOVQ   CX, DX
	ANDQ   $-32, DX
	JZ     gz_u16

gz_u32:
	VMULPS      (R8)(AX*4), Z15, Z4
	VMULPS      64(R8)(AX*4), Z15, Z5
	VFMADD231PS (SI)(AX*4), Z13, Z4
	VFMADD231PS 64(SI)(AX*4), Z13, Z5
	VMOVUPS     Z4, (R8)(AX*4)
	VMOVUPS     Z5, 64(R8)(AX*4)
	VFMADD231PS (DI)(AX*4), Z4, Z0
	VFMADD231PS 64(DI)(AX*4), Z5, Z1
	ADDQ        $32, AX
	CMPQ        AX, DX
	JLT         gz_u32

gz_u16:
	CMPQ        AX, R13
	JGE         gz_utail
	VMULPS      (R8)(AX*4), Z15, Z4
	VFMADD231PS (SI)(AX*4), Z13, Z4
	VMOVUPS     Z4, (R8)(AX*4)
	VFMADD231PS (DI)(AX*4), Z4, Z2
	ADDQ        $16, AX

gz_utail:
	CMPQ        AX, CX
	JGE         gz_ureduce
	VMOVUPS.Z   (R8)(AX*4), K1, Z4
	VMOVUPS.Z   (SI)(AX*4), K1, Z5
	VMOVUPS.Z   (DI)(AX*4), K1, Z6
	VMULPS      Z15, Z4, Z4
	VFMADD231PS Z5, Z13, Z4
	VMOVUPS     Z4, K1, (R8)(AX*4)
	VFMADD231PS Z6, Z4, Z3

gz_ureduce:
	VADDPS Z1, Z0, Z0
	VADDPS Z3, Z2, Z2
	VADDPS Z2, Z0, Z0
	HSUM16(Z0, Y0, X0, Y1, X1)
	VMOVSS X0, (R11)

	LEAQ (R8)(CX*4), R8
	ADDQ $4, R10
	ADDQ $4, R11
	DECQ R12
	JNZ  gz_row

gz_done:
	VZEROUPPER
	RET

// SILU16CORE(G): Z0 ← silu(G) for the 16 lanes of G: SILU8CORE's operations, each the
// same rounding (VRNDSCALEPS $0 is VROUNDPS $0), the blend through a mask of the sign
// bits. Clobbers Z1-Z7 and K2.
#define SILU16CORE(G) \
	VPORD        negzero<>(SB), G, Z1 \
	VMAXPS       expmin<>(SB), Z1, Z1 \
	VMULPS       log2e<>(SB), Z1, Z2 \
	VRNDSCALEPS  $0, Z2, Z2 \
	VFMADD231PS  nln2hi<>(SB), Z2, Z1 \
	VFMADD231PS  nln2lo<>(SB), Z2, Z1 \
	VMOVUPS      ep0<>(SB), Z3 \
	VFMADD213PS  ep1<>(SB), Z1, Z3 \
	VFMADD213PS  ep2<>(SB), Z1, Z3 \
	VFMADD213PS  ep3<>(SB), Z1, Z3 \
	VFMADD213PS  ep4<>(SB), Z1, Z3 \
	VFMADD213PS  ep5<>(SB), Z1, Z3 \
	VMULPS       Z1, Z1, Z4 \
	VFMADD213PS  Z1, Z4, Z3 \
	VADDPS       one<>(SB), Z3, Z3 \
	VCVTPS2DQ    Z2, Z2 \
	VPADDD       bias127<>(SB), Z2, Z2 \
	VPSLLD       $23, Z2, Z2 \
	VMULPS       Z2, Z3, Z3 \
	VADDPS       one<>(SB), Z3, Z4 \
	VMOVUPS      one<>(SB), Z5 \
	VDIVPS       Z4, Z5, Z5 \
	VMULPS       Z5, Z3, Z6 \
	VPTESTMD     negzero<>(SB), G, K2 \
	VMOVAPS      Z6, K2, Z5 \
	VMULPS       Z5, G, Z0

// func siluMulAVX512(dst, g, u []float32)
TEXT ·siluMulAVX512(SB), NOSPLIT, $0-72
	MOVQ  dst_base+0(FP), DI
	MOVQ  dst_len+8(FP), CX
	MOVQ  g_base+24(FP), SI
	MOVQ  u_base+48(FP), BX
	MOVQ  u_len+56(FP), R10
	XORQ  AX, AX
	MOVQ  CX, DX
	ANDQ  $-16, DX
	TESTQ R10, R10
	JZ    sz_nou
	CMPQ  AX, DX
	JGE   sz_utail

sz_uloop:
	VMOVUPS (SI)(AX*4), Z8
	SILU16CORE(Z8)
	VMULPS  (BX)(AX*4), Z0, Z0
	VMOVUPS Z0, (DI)(AX*4)
	ADDQ    $16, AX
	CMPQ    AX, DX
	JLT     sz_uloop

sz_utail:
	SUBQ      AX, CX
	JZ        sz_sdone
	KTAIL(CX, R8, K1)
	VMOVUPS.Z (SI)(AX*4), K1, Z8
	VMOVUPS.Z (BX)(AX*4), K1, Z10
	SILU16CORE(Z8)
	VMULPS    Z10, Z0, Z0
	VMOVUPS   Z0, K1, (DI)(AX*4)
	JMP       sz_sdone

sz_nou:
	CMPQ AX, DX
	JGE  sz_stail

sz_sloop:
	VMOVUPS (SI)(AX*4), Z8
	SILU16CORE(Z8)
	VMOVUPS Z0, (DI)(AX*4)
	ADDQ    $16, AX
	CMPQ    AX, DX
	JLT     sz_sloop

sz_stail:
	SUBQ      AX, CX
	JZ        sz_sdone
	KTAIL(CX, R8, K1)
	VMOVUPS.Z (SI)(AX*4), K1, Z8
	SILU16CORE(Z8)
	VMOVUPS   Z0, K1, (DI)(AX*4)

sz_sdone:
	VZEROUPPER
	RET

// func f16ToF32AVX512(dst []float32, src []uint16)
TEXT ·f16ToF32AVX512(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ src_base+24(FP), SI
	XORQ AX, AX
	MOVQ CX, DX
	ANDQ $-64, DX
	JZ   hz_16

hz_64:
	VCVTPH2PS (SI)(AX*2), Z0
	VCVTPH2PS 32(SI)(AX*2), Z1
	VCVTPH2PS 64(SI)(AX*2), Z2
	VCVTPH2PS 96(SI)(AX*2), Z3
	VMOVUPS   Z0, (DI)(AX*4)
	VMOVUPS   Z1, 64(DI)(AX*4)
	VMOVUPS   Z2, 128(DI)(AX*4)
	VMOVUPS   Z3, 192(DI)(AX*4)
	ADDQ      $64, AX
	CMPQ      AX, DX
	JLT       hz_64

hz_16:
	MOVQ CX, DX
	ANDQ $-16, DX
	CMPQ AX, DX
	JGE  hz_tail

hz_16loop:
	VCVTPH2PS (SI)(AX*2), Z0
	VMOVUPS   Z0, (DI)(AX*4)
	ADDQ      $16, AX
	CMPQ      AX, DX
	JLT       hz_16loop

hz_tail:
	CMPQ AX, CX
	JGE  hz_done

hz_1:
	MOVWLZX   (SI)(AX*2), DX
	MOVQ      DX, X0
	VCVTPH2PS X0, X0
	VMOVSS    X0, (DI)(AX*4)
	INCQ      AX
	CMPQ      AX, CX
	JLT       hz_1

hz_done:
	VZEROUPPER
	RET

// func dequantInt8AVX2(dst []float32, src []int8, scales []float32)
//
// Whole blocks of 32 (kvBlock) in four vectors; a short last block one value at a time.
TEXT ·dequantInt8AVX2(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ src_base+24(FP), SI
	MOVQ scales_base+48(FP), BX
	XORQ AX, AX

dq_32:
	MOVQ         CX, DX
	SUBQ         AX, DX
	CMPQ         DX, $32
	JLT          dq_tail
	VBROADCASTSS (BX), Y15
	// A cache tile is dequantised as it arrives from memory: ask for the codes 2 KiB
	// (eight 256-value rows) and the scales 256 bytes ahead.
	PREFETCHT0   2048(SI)(AX*1)
	PREFETCHT0   256(BX)
	ADDQ         $4, BX
	VPMOVSXBD    (SI)(AX*1), Y0
	VPMOVSXBD    8(SI)(AX*1), Y1
	VPMOVSXBD    16(SI)(AX*1), Y2
	VPMOVSXBD    24(SI)(AX*1), Y3
	VCVTDQ2PS    Y0, Y0
	VCVTDQ2PS    Y1, Y1
	VCVTDQ2PS    Y2, Y2
	VCVTDQ2PS    Y3, Y3
	VMULPS       Y15, Y0, Y0
	VMULPS       Y15, Y1, Y1
	VMULPS       Y15, Y2, Y2
	VMULPS       Y15, Y3, Y3
	VMOVUPS      Y0, (DI)(AX*4)
	VMOVUPS      Y1, 32(DI)(AX*4)
	VMOVUPS      Y2, 64(DI)(AX*4)
	VMOVUPS      Y3, 96(DI)(AX*4)
	ADDQ         $32, AX
	JMP          dq_32

dq_tail:
	TESTQ  DX, DX
	JZ     dq_done
	VMOVSS (BX), X15

dq_1:
	MOVBQSX    (SI)(AX*1), DX
	VCVTSI2SSL DX, X0, X0
	VMULSS     X15, X0, X0
	VMOVSS     X0, (DI)(AX*4)
	INCQ       AX
	CMPQ       AX, CX
	JLT        dq_1

dq_done:
	VZEROUPPER
	RET

// EXP8CORE(Y): Y0 ← e^Y for the 8 lanes of Y (Y ≤ 0), SILU8CORE's exponential: the
// argument clamped to ln 2⁻¹²⁶, n = round(Y·log₂e), r = Y − n·ln 2 in two parts, Cephes'
// polynomial and 2ⁿ added to the exponent. Clobbers Y1-Y4.
#define EXP8CORE(G) \
	VMAXPS       expmin<>(SB), G, Y1 \
	VMULPS       log2e<>(SB), Y1, Y2 \
	VROUNDPS     $0, Y2, Y2 \
	VFMADD231PS  nln2hi<>(SB), Y2, Y1 \
	VFMADD231PS  nln2lo<>(SB), Y2, Y1 \
	VMOVUPS      ep0<>(SB), Y3 \
	VFMADD213PS  ep1<>(SB), Y1, Y3 \
	VFMADD213PS  ep2<>(SB), Y1, Y3 \
	VFMADD213PS  ep3<>(SB), Y1, Y3 \
	VFMADD213PS  ep4<>(SB), Y1, Y3 \
	VFMADD213PS  ep5<>(SB), Y1, Y3 \
	VMULPS       Y1, Y1, Y4 \
	VFMADD213PS  Y1, Y4, Y3 \
	VADDPS       one<>(SB), Y3, Y3 \
	VCVTPS2DQ    Y2, Y2 \
	VPADDD       bias127<>(SB), Y2, Y2 \
	VPSLLD       $23, Y2, Y2 \
	VMULPS       Y2, Y3, Y0

// func expSubAVX2(x []float32, m float32) float32
TEXT ·expSubAVX2(SB), NOSPLIT, $0-36
	MOVQ         x_base+0(FP), DI
	MOVQ         x_len+8(FP), CX
	VBROADCASTSS m+24(FP), Y9
	VXORPS       Y10, Y10, Y10
	XORQ         AX, AX
	MOVQ         CX, DX
	ANDQ         $-8, DX
	CMPQ         AX, DX
	JGE          esa_tail

esa_loop:
	VMOVUPS (DI)(AX*4), Y8
	VSUBPS  Y9, Y8, Y8
	EXP8CORE(Y8)
	VMOVUPS Y0, (DI)(AX*4)
	VADDPS  Y0, Y10, Y10
	ADDQ    $8, AX
	CMPQ    AX, DX
	JLT     esa_loop

esa_tail:
	SUBQ       AX, CX
	JZ         esa_done
	TAILMASK(CX, R8, R9, Y11)
	VMASKMOVPS (DI)(AX*4), Y11, Y8
	VSUBPS     Y9, Y8, Y8
	EXP8CORE(Y8)
	VMASKMOVPS Y0, Y11, (DI)(AX*4)
	VANDPS     Y11, Y0, Y0
	VADDPS     Y0, Y10, Y10

esa_done:
	HSUM8(Y10, X10, X11)
	VMOVSS     X10, ret+32(FP)
	VZEROUPPER
	RET

// EXP16CORE(G): Z0 ← e^G for the 16 lanes of G (G ≤ 0), EXP8CORE's operations.
// Clobbers Z1-Z4.
#define EXP16CORE(G) \
	VMAXPS       expmin<>(SB), G, Z1 \
	VMULPS       log2e<>(SB), Z1, Z2 \
	VRNDSCALEPS  $0, Z2, Z2 \
	VFMADD231PS  nln2hi<>(SB), Z2, Z1 \
	VFMADD231PS  nln2lo<>(SB), Z2, Z1 \
	VMOVUPS      ep0<>(SB), Z3 \
	VFMADD213PS  ep1<>(SB), Z1, Z3 \
	VFMADD213PS  ep2<>(SB), Z1, Z3 \
	VFMADD213PS  ep3<>(SB), Z1, Z3 \
	VFMADD213PS  ep4<>(SB), Z1, Z3 \
	VFMADD213PS  ep5<>(SB), Z1, Z3 \
	VMULPS       Z1, Z1, Z4 \
	VFMADD213PS  Z1, Z4, Z3 \
	VADDPS       one<>(SB), Z3, Z3 \
	VCVTPS2DQ    Z2, Z2 \
	VPADDD       bias127<>(SB), Z2, Z2 \
	VPSLLD       $23, Z2, Z2 \
	VMULPS       Z2, Z3, Z0

// func expSubAVX512(x []float32, m float32) float32
TEXT ·expSubAVX512(SB), NOSPLIT, $0-36
	MOVQ         x_base+0(FP), DI
	MOVQ         x_len+8(FP), CX
	VBROADCASTSS m+24(FP), Z9
	VXORPS       Z10, Z10, Z10
	XORQ         AX, AX
	MOVQ         CX, DX
	ANDQ         $-16, DX
	CMPQ         AX, DX
	JGE          esz_tail

esz_loop:
	VMOVUPS (DI)(AX*4), Z8
	VSUBPS  Z9, Z8, Z8
	EXP16CORE(Z8)
	VMOVUPS Z0, (DI)(AX*4)
	VADDPS  Z0, Z10, Z10
	ADDQ    $16, AX
	CMPQ    AX, DX
	JLT     esz_loop

esz_tail:
	SUBQ      AX, CX
	JZ        esz_done
	KTAIL(CX, R8, K1)
	VMOVUPS.Z (DI)(AX*4), K1, Z8
	VSUBPS    Z9, Z8, Z8
	EXP16CORE(Z8)
	VMOVUPS   Z0, K1, (DI)(AX*4)
	VADDPS    Z0, Z10, K1, Z10

esz_done:
	HSUM16(Z10, Y10, X10, Y11, X11)
	VMOVSS     X10, ret+32(FP)
	VZEROUPPER
	RET

// nibble<>: 0x0f in every byte.
DATA nibble<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA nibble<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL nibble<>(SB), RODATA|NOPTR, $16

// eight<>: int32 8.
DATA eight<>+0(SB)/4, $8
DATA eight<>+4(SB)/4, $8
DATA eight<>+8(SB)/4, $8
DATA eight<>+12(SB)/4, $8
DATA eight<>+16(SB)/4, $8
DATA eight<>+20(SB)/4, $8
DATA eight<>+24(SB)/4, $8
DATA eight<>+28(SB)/4, $8
GLOBL eight<>(SB), RODATA|NOPTR, $32

// func dequantQ4AVX2(dst []float32, src []byte, scales []uint16)
//
// Whole blocks of 32 only (len(dst)/32 of them; the Go wrapper does a short last one):
// the 16 code bytes split into low nibbles (values 0-15) and high ones (16-31), widened
// to int32, less 8, converted and multiplied by the block's half scale.
TEXT ·dequantQ4AVX2(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ src_base+24(FP), SI
	MOVQ scales_base+48(FP), BX
	SHRQ $5, CX
	JZ   q4_done
	VMOVDQU nibble<>(SB), X14
	VMOVDQU eight<>(SB), Y13

q4_block:
	// As dequantInt8AVX2: the codes 1 KiB (eight 256-value rows) and the scales 64
	// bytes ahead, so that a cache tile's rows arrive while earlier ones are widened.
	PREFETCHT0   1024(SI)
	PREFETCHT0   64(BX)
	MOVWLZX      (BX), R8
	VMOVQ        R8, X15
	VCVTPH2PS    X15, X15
	VBROADCASTSS X15, Y15
	VMOVDQU      (SI), X0
	VPAND        X14, X0, X1
	VPSRLW       $4, X0, X2
	VPAND        X14, X2, X2
	VPSRLDQ      $8, X1, X3
	VPSRLDQ      $8, X2, X4
	VPMOVZXBD    X1, Y5
	VPMOVZXBD    X3, Y6
	VPMOVZXBD    X2, Y7
	VPMOVZXBD    X4, Y8
	VPSUBD       Y13, Y5, Y5
	VPSUBD       Y13, Y6, Y6
	VPSUBD       Y13, Y7, Y7
	VPSUBD       Y13, Y8, Y8
	VCVTDQ2PS    Y5, Y5
	VCVTDQ2PS    Y6, Y6
	VCVTDQ2PS    Y7, Y7
	VCVTDQ2PS    Y8, Y8
	VMULPS       Y15, Y5, Y5
	VMULPS       Y15, Y6, Y6
	VMULPS       Y15, Y7, Y7
	VMULPS       Y15, Y8, Y8
	VMOVUPS      Y5, (DI)
	VMOVUPS      Y6, 32(DI)
	VMOVUPS      Y7, 64(DI)
	VMOVUPS      Y8, 96(DI)
	ADDQ         $2, BX
	ADDQ         $16, SI
	ADDQ         $128, DI
	DECQ         CX
	JNZ          q4_block

q4_done:
	VZEROUPPER
	RET

// func maxAVX2(x []float32) float32
//
// The largest of x[:len&^7] and negative infinity (the Go wrapper does the rest).
TEXT ·maxAVX2(SB), NOSPLIT, $0-28
	MOVQ         x_base+0(FP), SI
	MOVQ         x_len+8(FP), CX
	MOVL         $0xff800000, AX
	MOVL         AX, ret+24(FP)
	VBROADCASTSS ret+24(FP), Y0
	SHRQ         $3, CX
	JZ           mx_reduce

mx_loop:
	VMAXPS (SI), Y0, Y0
	ADDQ   $32, SI
	DECQ   CX
	JNZ    mx_loop

mx_reduce:
	VEXTRACTF128 $1, Y0, X1
	VMAXPS       X1, X0, X0
	VMOVHLPS     X0, X0, X1
	VMAXPS       X1, X0, X0
	VMOVSHDUP    X0, X1
	VMAXSS       X1, X0, X0
	VMOVSS       X0, ret+24(FP)
	VZEROUPPER
	RET

// func maxAVX512(x []float32) float32
TEXT ·maxAVX512(SB), NOSPLIT, $0-28
	MOVQ         x_base+0(FP), SI
	MOVQ         x_len+8(FP), CX
	MOVL         $0xff800000, AX
	MOVL         AX, ret+24(FP)
	VBROADCASTSS ret+24(FP), Z0
	MOVQ         CX, DX
	SHRQ         $4, DX
	JZ           mz_tail

mz_loop:
	VMAXPS (SI), Z0, Z0
	ADDQ   $64, SI
	DECQ   DX
	JNZ    mz_loop

mz_tail:
	ANDQ      $15, CX
	JZ        mz_reduce
	KTAIL(CX, R8, K1)
	VMAXPS    (SI), Z0, K1, Z0

mz_reduce:
	VEXTRACTF64X4 $1, Z0, Y1
	VMAXPS        Y1, Y0, Y0
	VEXTRACTF128  $1, Y0, X1
	VMAXPS        X1, X0, X0
	VMOVHLPS      X0, X0, X1
	VMAXPS        X1, X0, X0
	VMOVSHDUP     X0, X1
	VMAXSS        X1, X0, X0
	VMOVSS        X0, ret+24(FP)
	VZEROUPPER
	RET

// RED4ZT(c0, c1, c2, c3): the sums of c0…c3 into the four lanes of X28, in order, with
// EVEX instructions only (Z28-Z31 are out of VEX's reach); K2 must hold 0x1111.
#define RED4ZT(c0, c1, c2, c3) \
	VSHUFF32X4  $0x44, c1, c0, Z28 \
	VSHUFF32X4  $0xEE, c1, c0, Z29 \
	VADDPS      Z29, Z28, Z28 \
	VSHUFF32X4  $0x44, c3, c2, Z30 \
	VSHUFF32X4  $0xEE, c3, c2, Z31 \
	VADDPS      Z31, Z30, Z30 \
	VSHUFF32X4  $0x88, Z30, Z28, Z29 \
	VSHUFF32X4  $0xDD, Z30, Z28, Z31 \
	VADDPS      Z31, Z29, Z28 \
	VPERMILPS   $0x4E, Z28, Z29 \
	VADDPS      Z29, Z28, Z28 \
	VPERMILPS   $0xB1, Z28, Z29 \
	VADDPS      Z29, Z28, Z28 \
	VCOMPRESSPS Z28, K2, Z28

// func dot6x4F32AVX512(out []float32, os int, q []float32, k []float32, nb, d int)
//
// out[r·os + j] = q[r·d:(r+1)·d] · k[j·d:(j+1)·d] for the six rows r of q and the nb rows
// j of k, d a multiple of 16: blocks of 6 queries × 4 keys in 24 accumulators, each
// key chunk loaded once for the six queries, each query chunk once for the four keys;
// leftover keys 6 × 1.
TEXT ·dot6x4F32AVX512(SB), NOSPLIT, $0-96
	MOVL  $0x1111, AX
	KMOVW AX, K2
	MOVQ out_base+0(FP), R13
	MOVQ os+24(FP), SI
	SHLQ $2, SI
	MOVQ q_base+32(FP), R8
	MOVQ k_base+56(FP), R10
	MOVQ nb+80(FP), R12
	MOVQ d+88(FP), BX
	MOVQ BX, DX
	IMULQ $4, DX          // key row stride in bytes
	SHLQ $2, BX                  // query row stride in bytes
dot6x4F32AVX512_j4:
	CMPQ R12, $4
	JLT  dot6x4F32AVX512_j1
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23
	MOVQ R8, R9
	LEAQ (R8)(BX*2), R9
	ADDQ BX, R9                  // R9: query row 3
	MOVQ R10, R11
	LEAQ (R10)(DX*2), R11
	ADDQ DX, R11                 // R11: key row 3
	MOVQ R8, R14
	MOVQ R10, R15
	MOVQ d+88(FP), CX
	SHRQ $4, CX
dot6x4F32AVX512_c4:
	VMOVUPS (R15), Z24
	VMOVUPS (R15)(DX*1), Z25
	VMOVUPS (R15)(DX*2), Z26
	VMOVUPS (R11), Z27
	VMOVUPS (R14), Z28
	VFMADD231PS Z24, Z28, Z0
	VFMADD231PS Z25, Z28, Z1
	VFMADD231PS Z26, Z28, Z2
	VFMADD231PS Z27, Z28, Z3
	VMOVUPS (R14)(BX*1), Z28
	VFMADD231PS Z24, Z28, Z4
	VFMADD231PS Z25, Z28, Z5
	VFMADD231PS Z26, Z28, Z6
	VFMADD231PS Z27, Z28, Z7
	VMOVUPS (R14)(BX*2), Z28
	VFMADD231PS Z24, Z28, Z8
	VFMADD231PS Z25, Z28, Z9
	VFMADD231PS Z26, Z28, Z10
	VFMADD231PS Z27, Z28, Z11
	VMOVUPS (R9), Z28
	VFMADD231PS Z24, Z28, Z12
	VFMADD231PS Z25, Z28, Z13
	VFMADD231PS Z26, Z28, Z14
	VFMADD231PS Z27, Z28, Z15
	VMOVUPS (R9)(BX*1), Z28
	VFMADD231PS Z24, Z28, Z16
	VFMADD231PS Z25, Z28, Z17
	VFMADD231PS Z26, Z28, Z18
	VFMADD231PS Z27, Z28, Z19
	VMOVUPS (R9)(BX*2), Z28
	VFMADD231PS Z24, Z28, Z20
	VFMADD231PS Z25, Z28, Z21
	VFMADD231PS Z26, Z28, Z22
	VFMADD231PS Z27, Z28, Z23
	ADDQ $64, R14
	ADDQ $64, R9
	ADDQ $64, R15
	ADDQ $64, R11
	DECQ CX
	JNZ  dot6x4F32AVX512_c4
	LEAQ (R13)(SI*2), DI
	LEAQ (DI)(SI*2), AX
	RED4ZT(Z0, Z1, Z2, Z3)
	VMOVUPS X28, (R13)
	RED4ZT(Z4, Z5, Z6, Z7)
	VMOVUPS X28, (R13)(SI*1)
	RED4ZT(Z8, Z9, Z10, Z11)
	VMOVUPS X28, (R13)(SI*2)
	RED4ZT(Z12, Z13, Z14, Z15)
	VMOVUPS X28, (DI)(SI*1)
	RED4ZT(Z16, Z17, Z18, Z19)
	VMOVUPS X28, (DI)(SI*2)
	RED4ZT(Z20, Z21, Z22, Z23)
	VMOVUPS X28, (AX)(SI*1)
	ADDQ $16, R13
	LEAQ (R10)(DX*4), R10
	SUBQ $4, R12
	JMP  dot6x4F32AVX512_j4
dot6x4F32AVX512_j1:
	TESTQ R12, R12
	JZ    dot6x4F32AVX512_done
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	MOVQ R8, R14
	LEAQ (R8)(BX*2), R9
	ADDQ BX, R9
	MOVQ R10, R15
	MOVQ d+88(FP), CX
	SHRQ $4, CX
dot6x4F32AVX512_c1:
	VMOVUPS (R15), Z24
	VFMADD231PS (R14), Z24, Z0
	VFMADD231PS (R14)(BX*1), Z24, Z1
	VFMADD231PS (R14)(BX*2), Z24, Z2
	VFMADD231PS (R9), Z24, Z3
	VFMADD231PS (R9)(BX*1), Z24, Z4
	VFMADD231PS (R9)(BX*2), Z24, Z5
	ADDQ $64, R14
	ADDQ $64, R9
	ADDQ $64, R15
	DECQ CX
	JNZ  dot6x4F32AVX512_c1
	LEAQ (R13)(SI*2), DI
	LEAQ (DI)(SI*2), AX
	HSUM16(Z0, Y0, X0, Y6, X7)
	VMOVSS X0, (R13)
	HSUM16(Z1, Y1, X1, Y6, X7)
	VMOVSS X1, (R13)(SI*1)
	HSUM16(Z2, Y2, X2, Y6, X7)
	VMOVSS X2, (R13)(SI*2)
	HSUM16(Z3, Y3, X3, Y6, X7)
	VMOVSS X3, (DI)(SI*1)
	HSUM16(Z4, Y4, X4, Y6, X7)
	VMOVSS X4, (DI)(SI*2)
	HSUM16(Z5, Y5, X5, Y6, X7)
	VMOVSS X5, (AX)(SI*1)
	ADDQ $4, R13
	ADDQ DX, R10
	DECQ R12
	JMP  dot6x4F32AVX512_j1
dot6x4F32AVX512_done:
	VZEROUPPER
	RET

// func dot6x4F16AVX512(out []float32, os int, q []float32, k []uint16, nb, d int)
//
// out[r·os + j] = q[r·d:(r+1)·d] · k[j·d:(j+1)·d] for the six rows r of q and the nb rows
// j of k, d a multiple of 16: blocks of 6 queries × 4 keys in 24 accumulators, each
// key chunk loaded once for the six queries, each query chunk once for the four keys;
// leftover keys 6 × 1.
TEXT ·dot6x4F16AVX512(SB), NOSPLIT, $0-96
	MOVL  $0x1111, AX
	KMOVW AX, K2
	MOVQ out_base+0(FP), R13
	MOVQ os+24(FP), SI
	SHLQ $2, SI
	MOVQ q_base+32(FP), R8
	MOVQ k_base+56(FP), R10
	MOVQ nb+80(FP), R12
	MOVQ d+88(FP), BX
	MOVQ BX, DX
	IMULQ $2, DX          // key row stride in bytes
	SHLQ $2, BX                  // query row stride in bytes
dot6x4F16AVX512_j4:
	CMPQ R12, $4
	JLT  dot6x4F16AVX512_j1
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23
	MOVQ R8, R9
	LEAQ (R8)(BX*2), R9
	ADDQ BX, R9                  // R9: query row 3
	MOVQ R10, R11
	LEAQ (R10)(DX*2), R11
	ADDQ DX, R11                 // R11: key row 3
	MOVQ R8, R14
	MOVQ R10, R15
	MOVQ d+88(FP), CX
	SHRQ $4, CX
	MOVQ DX, AX
	SHLQ $3, AX                  // AX: eight key rows, the prefetch distance
dot6x4F16AVX512_c4:
	// The rows eight ahead, into L1 while these are multiplied: a decode step reads
	// the keys from memory once, and without it waits on each row's first line.
	LEAQ (R15)(AX*1), DI
	PREFETCHT0 (DI)
	PREFETCHT0 (DI)(DX*1)
	PREFETCHT0 (DI)(DX*2)
	PREFETCHT0 (R11)(AX*1)
	VCVTPH2PS (R15), Z24
	VCVTPH2PS (R15)(DX*1), Z25
	VCVTPH2PS (R15)(DX*2), Z26
	VCVTPH2PS (R11), Z27
	VMOVUPS (R14), Z28
	VFMADD231PS Z24, Z28, Z0
	VFMADD231PS Z25, Z28, Z1
	VFMADD231PS Z26, Z28, Z2
	VFMADD231PS Z27, Z28, Z3
	VMOVUPS (R14)(BX*1), Z28
	VFMADD231PS Z24, Z28, Z4
	VFMADD231PS Z25, Z28, Z5
	VFMADD231PS Z26, Z28, Z6
	VFMADD231PS Z27, Z28, Z7
	VMOVUPS (R14)(BX*2), Z28
	VFMADD231PS Z24, Z28, Z8
	VFMADD231PS Z25, Z28, Z9
	VFMADD231PS Z26, Z28, Z10
	VFMADD231PS Z27, Z28, Z11
	VMOVUPS (R9), Z28
	VFMADD231PS Z24, Z28, Z12
	VFMADD231PS Z25, Z28, Z13
	VFMADD231PS Z26, Z28, Z14
	VFMADD231PS Z27, Z28, Z15
	VMOVUPS (R9)(BX*1), Z28
	VFMADD231PS Z24, Z28, Z16
	VFMADD231PS Z25, Z28, Z17
	VFMADD231PS Z26, Z28, Z18
	VFMADD231PS Z27, Z28, Z19
	VMOVUPS (R9)(BX*2), Z28
	VFMADD231PS Z24, Z28, Z20
	VFMADD231PS Z25, Z28, Z21
	VFMADD231PS Z26, Z28, Z22
	VFMADD231PS Z27, Z28, Z23
	ADDQ $64, R14
	ADDQ $64, R9
	ADDQ $32, R15
	ADDQ $32, R11
	DECQ CX
	JNZ  dot6x4F16AVX512_c4
	LEAQ (R13)(SI*2), DI
	LEAQ (DI)(SI*2), AX
	RED4ZT(Z0, Z1, Z2, Z3)
	VMOVUPS X28, (R13)
	RED4ZT(Z4, Z5, Z6, Z7)
	VMOVUPS X28, (R13)(SI*1)
	RED4ZT(Z8, Z9, Z10, Z11)
	VMOVUPS X28, (R13)(SI*2)
	RED4ZT(Z12, Z13, Z14, Z15)
	VMOVUPS X28, (DI)(SI*1)
	RED4ZT(Z16, Z17, Z18, Z19)
	VMOVUPS X28, (DI)(SI*2)
	RED4ZT(Z20, Z21, Z22, Z23)
	VMOVUPS X28, (AX)(SI*1)
	ADDQ $16, R13
	LEAQ (R10)(DX*4), R10
	SUBQ $4, R12
	JMP  dot6x4F16AVX512_j4
dot6x4F16AVX512_j1:
	TESTQ R12, R12
	JZ    dot6x4F16AVX512_done
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	MOVQ R8, R14
	LEAQ (R8)(BX*2), R9
	ADDQ BX, R9
	MOVQ R10, R15
	MOVQ d+88(FP), CX
	SHRQ $4, CX
dot6x4F16AVX512_c1:
	VCVTPH2PS (R15), Z24
	VFMADD231PS (R14), Z24, Z0
	VFMADD231PS (R14)(BX*1), Z24, Z1
	VFMADD231PS (R14)(BX*2), Z24, Z2
	VFMADD231PS (R9), Z24, Z3
	VFMADD231PS (R9)(BX*1), Z24, Z4
	VFMADD231PS (R9)(BX*2), Z24, Z5
	ADDQ $64, R14
	ADDQ $64, R9
	ADDQ $32, R15
	DECQ CX
	JNZ  dot6x4F16AVX512_c1
	LEAQ (R13)(SI*2), DI
	LEAQ (DI)(SI*2), AX
	HSUM16(Z0, Y0, X0, Y6, X7)
	VMOVSS X0, (R13)
	HSUM16(Z1, Y1, X1, Y6, X7)
	VMOVSS X1, (R13)(SI*1)
	HSUM16(Z2, Y2, X2, Y6, X7)
	VMOVSS X2, (R13)(SI*2)
	HSUM16(Z3, Y3, X3, Y6, X7)
	VMOVSS X3, (DI)(SI*1)
	HSUM16(Z4, Y4, X4, Y6, X7)
	VMOVSS X4, (DI)(SI*2)
	HSUM16(Z5, Y5, X5, Y6, X7)
	VMOVSS X5, (AX)(SI*1)
	ADDQ $4, R13
	ADDQ DX, R10
	DECQ R12
	JMP  dot6x4F16AVX512_j1
dot6x4F16AVX512_done:
	VZEROUPPER
	RET

// func axpy6F32AVX512(acc []float32, w []float32, ws int, v []float32, n, d int)
//
// acc[r·d + i] += Σ_p w[r·ws + p]·v[p·d + i] for the six rows r of acc, p < n, d a
// multiple of 32: 32 columns of the six rows in 12 accumulators while the n value rows
// stream past, each value chunk loaded once for the six rows.
TEXT ·axpy6F32AVX512(SB), NOSPLIT, $0-96
	MOVQ acc_base+0(FP), DI
	MOVQ w_base+24(FP), R12
	MOVQ ws+48(FP), BX
	SHLQ $2, BX
	MOVQ v_base+56(FP), R13
	MOVQ d+88(FP), R8
	MOVQ R8, DX
	IMULQ $4, DX
	SHLQ $2, R8
	MOVQ d+88(FP), R14
	SHRQ $5, R14
	JZ   axpy6F32AVX512_done
	CMPQ n+80(FP), $0
	JEQ  axpy6F32AVX512_done
axpy6F32AVX512_chunk:
	LEAQ (DI)(R8*2), R11
	ADDQ R8, R11
	VMOVUPS (DI), Z0
	VMOVUPS 64(DI), Z1
	VMOVUPS (DI)(R8*1), Z2
	VMOVUPS 64(DI)(R8*1), Z3
	VMOVUPS (DI)(R8*2), Z4
	VMOVUPS 64(DI)(R8*2), Z5
	VMOVUPS (R11), Z6
	VMOVUPS 64(R11), Z7
	VMOVUPS (R11)(R8*1), Z8
	VMOVUPS 64(R11)(R8*1), Z9
	VMOVUPS (R11)(R8*2), Z10
	VMOVUPS 64(R11)(R8*2), Z11
	MOVQ R12, R9
	LEAQ (R12)(BX*2), R10
	ADDQ BX, R10
	MOVQ R13, SI
	MOVQ n+80(FP), CX
axpy6F32AVX512_p:
	VMOVUPS (SI), Z12
	VMOVUPS 64(SI), Z13
	VBROADCASTSS (R9), Z14
	VBROADCASTSS (R9)(BX*1), Z15
	VBROADCASTSS (R9)(BX*2), Z16
	VBROADCASTSS (R10), Z17
	VBROADCASTSS (R10)(BX*1), Z18
	VBROADCASTSS (R10)(BX*2), Z19
	VFMADD231PS Z14, Z12, Z0
	VFMADD231PS Z14, Z13, Z1
	VFMADD231PS Z15, Z12, Z2
	VFMADD231PS Z15, Z13, Z3
	VFMADD231PS Z16, Z12, Z4
	VFMADD231PS Z16, Z13, Z5
	VFMADD231PS Z17, Z12, Z6
	VFMADD231PS Z17, Z13, Z7
	VFMADD231PS Z18, Z12, Z8
	VFMADD231PS Z18, Z13, Z9
	VFMADD231PS Z19, Z12, Z10
	VFMADD231PS Z19, Z13, Z11
	ADDQ $4, R9
	ADDQ $4, R10
	ADDQ DX, SI
	DECQ CX
	JNZ  axpy6F32AVX512_p
	VMOVUPS Z0, (DI)
	VMOVUPS Z1, 64(DI)
	VMOVUPS Z2, (DI)(R8*1)
	VMOVUPS Z3, 64(DI)(R8*1)
	VMOVUPS Z4, (DI)(R8*2)
	VMOVUPS Z5, 64(DI)(R8*2)
	VMOVUPS Z6, (R11)
	VMOVUPS Z7, 64(R11)
	VMOVUPS Z8, (R11)(R8*1)
	VMOVUPS Z9, 64(R11)(R8*1)
	VMOVUPS Z10, (R11)(R8*2)
	VMOVUPS Z11, 64(R11)(R8*2)
	ADDQ $128, DI
	ADDQ $128, R13
	DECQ R14
	JNZ  axpy6F32AVX512_chunk
axpy6F32AVX512_done:
	VZEROUPPER
	RET

// func axpy6F16AVX512(acc []float32, w []float32, ws int, v []uint16, n, d int)
//
// acc[r·d + i] += Σ_p w[r·ws + p]·v[p·d + i] for the six rows r of acc, p < n, d a
// multiple of 32: 32 columns of the six rows in 12 accumulators while the n value rows
// stream past, each value chunk loaded once for the six rows.
TEXT ·axpy6F16AVX512(SB), NOSPLIT, $0-96
	MOVQ acc_base+0(FP), DI
	MOVQ w_base+24(FP), R12
	MOVQ ws+48(FP), BX
	SHLQ $2, BX
	MOVQ v_base+56(FP), R13
	MOVQ d+88(FP), R8
	MOVQ R8, DX
	IMULQ $2, DX
	SHLQ $2, R8
	MOVQ d+88(FP), R14
	SHRQ $5, R14
	JZ   axpy6F16AVX512_done
	CMPQ n+80(FP), $0
	JEQ  axpy6F16AVX512_done
	MOVQ n+80(FP), AX
	IMULQ DX, AX                 // AX: n rows, the prefetch distance
axpy6F16AVX512_chunk:
	LEAQ (DI)(R8*2), R11
	ADDQ R8, R11
	VMOVUPS (DI), Z0
	VMOVUPS 64(DI), Z1
	VMOVUPS (DI)(R8*1), Z2
	VMOVUPS 64(DI)(R8*1), Z3
	VMOVUPS (DI)(R8*2), Z4
	VMOVUPS 64(DI)(R8*2), Z5
	VMOVUPS (R11), Z6
	VMOVUPS 64(R11), Z7
	VMOVUPS (R11)(R8*1), Z8
	VMOVUPS 64(R11)(R8*1), Z9
	VMOVUPS (R11)(R8*2), Z10
	VMOVUPS 64(R11)(R8*2), Z11
	MOVQ R12, R9
	LEAQ (R12)(BX*2), R10
	ADDQ BX, R10
	MOVQ R13, SI
	MOVQ n+80(FP), CX
axpy6F16AVX512_p:
	// The same columns of the next n rows (the next tile's, in decode): into L1 by
	// the time they are read.
	PREFETCHT0 (SI)(AX*1)
	VCVTPH2PS (SI), Z12
	VCVTPH2PS 32(SI), Z13
	VBROADCASTSS (R9), Z14
	VBROADCASTSS (R9)(BX*1), Z15
	VBROADCASTSS (R9)(BX*2), Z16
	VBROADCASTSS (R10), Z17
	VBROADCASTSS (R10)(BX*1), Z18
	VBROADCASTSS (R10)(BX*2), Z19
	VFMADD231PS Z14, Z12, Z0
	VFMADD231PS Z14, Z13, Z1
	VFMADD231PS Z15, Z12, Z2
	VFMADD231PS Z15, Z13, Z3
	VFMADD231PS Z16, Z12, Z4
	VFMADD231PS Z16, Z13, Z5
	VFMADD231PS Z17, Z12, Z6
	VFMADD231PS Z17, Z13, Z7
	VFMADD231PS Z18, Z12, Z8
	VFMADD231PS Z18, Z13, Z9
	VFMADD231PS Z19, Z12, Z10
	VFMADD231PS Z19, Z13, Z11
	ADDQ $4, R9
	ADDQ $4, R10
	ADDQ DX, SI
	DECQ CX
	JNZ  axpy6F16AVX512_p
	VMOVUPS Z0, (DI)
	VMOVUPS Z1, 64(DI)
	VMOVUPS Z2, (DI)(R8*1)
	VMOVUPS Z3, 64(DI)(R8*1)
	VMOVUPS Z4, (DI)(R8*2)
	VMOVUPS Z5, 64(DI)(R8*2)
	VMOVUPS Z6, (R11)
	VMOVUPS Z7, 64(R11)
	VMOVUPS Z8, (R11)(R8*1)
	VMOVUPS Z9, 64(R11)(R8*1)
	VMOVUPS Z10, (R11)(R8*2)
	VMOVUPS Z11, 64(R11)(R8*2)
	ADDQ $128, DI
	ADDQ $64, R13
	DECQ R14
	JNZ  axpy6F16AVX512_chunk
axpy6F16AVX512_done:
	VZEROUPPER
	RET

// func dot6x2F32AVX2(out []float32, os int, q []float32, k []float32, nb, d int)
//
// dot6x4F32AVX512's products with 8-float vectors: blocks of 6 queries × 2 keys in 12
// accumulators (d a multiple of 16); leftover keys 6 × 1.
TEXT ·dot6x2F32AVX2(SB), NOSPLIT, $0-96
	MOVQ out_base+0(FP), R13
	MOVQ os+24(FP), SI
	SHLQ $2, SI
	MOVQ q_base+32(FP), R8
	MOVQ k_base+56(FP), R10
	MOVQ nb+80(FP), R12
	MOVQ d+88(FP), BX
	MOVQ BX, DX
	IMULQ $4, DX
	SHLQ $2, BX
dot6x2F32AVX2_j2:
	CMPQ R12, $2
	JLT  dot6x2F32AVX2_j1
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	MOVQ R8, R14
	LEAQ (R8)(BX*2), R9
	ADDQ BX, R9
	MOVQ R10, R15
	MOVQ d+88(FP), CX
	SHRQ $3, CX
dot6x2F32AVX2_c2:
	VMOVUPS (R15), Y12
	VMOVUPS (R15)(DX*1), Y13
	VMOVUPS (R14), Y14
	VFMADD231PS Y12, Y14, Y0
	VFMADD231PS Y13, Y14, Y1
	VMOVUPS (R14)(BX*1), Y14
	VFMADD231PS Y12, Y14, Y2
	VFMADD231PS Y13, Y14, Y3
	VMOVUPS (R14)(BX*2), Y14
	VFMADD231PS Y12, Y14, Y4
	VFMADD231PS Y13, Y14, Y5
	VMOVUPS (R9), Y14
	VFMADD231PS Y12, Y14, Y6
	VFMADD231PS Y13, Y14, Y7
	VMOVUPS (R9)(BX*1), Y14
	VFMADD231PS Y12, Y14, Y8
	VFMADD231PS Y13, Y14, Y9
	VMOVUPS (R9)(BX*2), Y14
	VFMADD231PS Y12, Y14, Y10
	VFMADD231PS Y13, Y14, Y11
	ADDQ $32, R14
	ADDQ $32, R9
	ADDQ $32, R15
	DECQ CX
	JNZ  dot6x2F32AVX2_c2
	LEAQ (R13)(SI*2), DI
	LEAQ (DI)(SI*2), AX
	HSUM8(Y0, X0, X15)
	VMOVSS X0, (R13)
	HSUM8(Y1, X1, X15)
	VMOVSS X1, 4(R13)
	HSUM8(Y2, X2, X15)
	VMOVSS X2, (R13)(SI*1)
	HSUM8(Y3, X3, X15)
	VMOVSS X3, 4(R13)(SI*1)
	HSUM8(Y4, X4, X15)
	VMOVSS X4, (R13)(SI*2)
	HSUM8(Y5, X5, X15)
	VMOVSS X5, 4(R13)(SI*2)
	HSUM8(Y6, X6, X15)
	VMOVSS X6, (DI)(SI*1)
	HSUM8(Y7, X7, X15)
	VMOVSS X7, 4(DI)(SI*1)
	HSUM8(Y8, X8, X15)
	VMOVSS X8, (DI)(SI*2)
	HSUM8(Y9, X9, X15)
	VMOVSS X9, 4(DI)(SI*2)
	HSUM8(Y10, X10, X15)
	VMOVSS X10, (AX)(SI*1)
	HSUM8(Y11, X11, X15)
	VMOVSS X11, 4(AX)(SI*1)
	ADDQ $8, R13
	LEAQ (R10)(DX*2), R10
	SUBQ $2, R12
	JMP  dot6x2F32AVX2_j2
dot6x2F32AVX2_j1:
	TESTQ R12, R12
	JZ    dot6x2F32AVX2_done
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	MOVQ R8, R14
	LEAQ (R8)(BX*2), R9
	ADDQ BX, R9
	MOVQ R10, R15
	MOVQ d+88(FP), CX
	SHRQ $3, CX
dot6x2F32AVX2_c1:
	VMOVUPS (R15), Y12
	VFMADD231PS (R14), Y12, Y0
	VFMADD231PS (R14)(BX*1), Y12, Y1
	VFMADD231PS (R14)(BX*2), Y12, Y2
	VFMADD231PS (R9), Y12, Y3
	VFMADD231PS (R9)(BX*1), Y12, Y4
	VFMADD231PS (R9)(BX*2), Y12, Y5
	ADDQ $32, R14
	ADDQ $32, R9
	ADDQ $32, R15
	DECQ CX
	JNZ  dot6x2F32AVX2_c1
	LEAQ (R13)(SI*2), DI
	LEAQ (DI)(SI*2), AX
	HSUM8(Y0, X0, X15)
	VMOVSS X0, (R13)
	HSUM8(Y1, X1, X15)
	VMOVSS X1, (R13)(SI*1)
	HSUM8(Y2, X2, X15)
	VMOVSS X2, (R13)(SI*2)
	HSUM8(Y3, X3, X15)
	VMOVSS X3, (DI)(SI*1)
	HSUM8(Y4, X4, X15)
	VMOVSS X4, (DI)(SI*2)
	HSUM8(Y5, X5, X15)
	VMOVSS X5, (AX)(SI*1)
dot6x2F32AVX2_done:
	VZEROUPPER
	RET

// func dot6x2F16AVX2(out []float32, os int, q []float32, k []uint16, nb, d int)
//
// dot6x4F32AVX512's products with 8-float vectors: blocks of 6 queries × 2 keys in 12
// accumulators (d a multiple of 16); leftover keys 6 × 1.
TEXT ·dot6x2F16AVX2(SB), NOSPLIT, $0-96
	MOVQ out_base+0(FP), R13
	MOVQ os+24(FP), SI
	SHLQ $2, SI
	MOVQ q_base+32(FP), R8
	MOVQ k_base+56(FP), R10
	MOVQ nb+80(FP), R12
	MOVQ d+88(FP), BX
	MOVQ BX, DX
	IMULQ $2, DX
	SHLQ $2, BX
dot6x2F16AVX2_j2:
	CMPQ R12, $2
	JLT  dot6x2F16AVX2_j1
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	MOVQ R8, R14
	LEAQ (R8)(BX*2), R9
	ADDQ BX, R9
	MOVQ R10, R15
	MOVQ d+88(FP), CX
	SHRQ $3, CX
	MOVQ DX, AX
	SHLQ $3, AX                  // AX: eight key rows, the prefetch distance
dot6x2F16AVX2_c2:
	// The rows eight ahead, as in dot6x4F16AVX512.
	PREFETCHT0 (R15)(AX*1)
	LEAQ (R15)(AX*1), DI
	PREFETCHT0 (DI)(DX*1)
	VCVTPH2PS (R15), Y12
	VCVTPH2PS (R15)(DX*1), Y13
	VMOVUPS (R14), Y14
	VFMADD231PS Y12, Y14, Y0
	VFMADD231PS Y13, Y14, Y1
	VMOVUPS (R14)(BX*1), Y14
	VFMADD231PS Y12, Y14, Y2
	VFMADD231PS Y13, Y14, Y3
	VMOVUPS (R14)(BX*2), Y14
	VFMADD231PS Y12, Y14, Y4
	VFMADD231PS Y13, Y14, Y5
	VMOVUPS (R9), Y14
	VFMADD231PS Y12, Y14, Y6
	VFMADD231PS Y13, Y14, Y7
	VMOVUPS (R9)(BX*1), Y14
	VFMADD231PS Y12, Y14, Y8
	VFMADD231PS Y13, Y14, Y9
	VMOVUPS (R9)(BX*2), Y14
	VFMADD231PS Y12, Y14, Y10
	VFMADD231PS Y13, Y14, Y11
	ADDQ $32, R14
	ADDQ $32, R9
	ADDQ $16, R15
	DECQ CX
	JNZ  dot6x2F16AVX2_c2
	LEAQ (R13)(SI*2), DI
	LEAQ (DI)(SI*2), AX
	HSUM8(Y0, X0, X15)
	VMOVSS X0, (R13)
	HSUM8(Y1, X1, X15)
	VMOVSS X1, 4(R13)
	HSUM8(Y2, X2, X15)
	VMOVSS X2, (R13)(SI*1)
	HSUM8(Y3, X3, X15)
	VMOVSS X3, 4(R13)(SI*1)
	HSUM8(Y4, X4, X15)
	VMOVSS X4, (R13)(SI*2)
	HSUM8(Y5, X5, X15)
	VMOVSS X5, 4(R13)(SI*2)
	HSUM8(Y6, X6, X15)
	VMOVSS X6, (DI)(SI*1)
	HSUM8(Y7, X7, X15)
	VMOVSS X7, 4(DI)(SI*1)
	HSUM8(Y8, X8, X15)
	VMOVSS X8, (DI)(SI*2)
	HSUM8(Y9, X9, X15)
	VMOVSS X9, 4(DI)(SI*2)
	HSUM8(Y10, X10, X15)
	VMOVSS X10, (AX)(SI*1)
	HSUM8(Y11, X11, X15)
	VMOVSS X11, 4(AX)(SI*1)
	ADDQ $8, R13
	LEAQ (R10)(DX*2), R10
	SUBQ $2, R12
	JMP  dot6x2F16AVX2_j2
dot6x2F16AVX2_j1:
	TESTQ R12, R12
	JZ    dot6x2F16AVX2_done
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	MOVQ R8, R14
	LEAQ (R8)(BX*2), R9
	ADDQ BX, R9
	MOVQ R10, R15
	MOVQ d+88(FP), CX
	SHRQ $3, CX
dot6x2F16AVX2_c1:
	VCVTPH2PS (R15), Y12
	VFMADD231PS (R14), Y12, Y0
	VFMADD231PS (R14)(BX*1), Y12, Y1
	VFMADD231PS (R14)(BX*2), Y12, Y2
	VFMADD231PS (R9), Y12, Y3
	VFMADD231PS (R9)(BX*1), Y12, Y4
	VFMADD231PS (R9)(BX*2), Y12, Y5
	ADDQ $32, R14
	ADDQ $32, R9
	ADDQ $16, R15
	DECQ CX
	JNZ  dot6x2F16AVX2_c1
	LEAQ (R13)(SI*2), DI
	LEAQ (DI)(SI*2), AX
	HSUM8(Y0, X0, X15)
	VMOVSS X0, (R13)
	HSUM8(Y1, X1, X15)
	VMOVSS X1, (R13)(SI*1)
	HSUM8(Y2, X2, X15)
	VMOVSS X2, (R13)(SI*2)
	HSUM8(Y3, X3, X15)
	VMOVSS X3, (DI)(SI*1)
	HSUM8(Y4, X4, X15)
	VMOVSS X4, (DI)(SI*2)
	HSUM8(Y5, X5, X15)
	VMOVSS X5, (AX)(SI*1)
dot6x2F16AVX2_done:
	VZEROUPPER
	RET

// func axpy6F32AVX2(acc []float32, w []float32, ws int, v []float32, n, d int)
//
// axpy6F32AVX512's sums with 8-float vectors: 16 columns of the six rows in 12
// accumulators (d a multiple of 16).
TEXT ·axpy6F32AVX2(SB), NOSPLIT, $0-96
	MOVQ acc_base+0(FP), DI
	MOVQ w_base+24(FP), R12
	MOVQ ws+48(FP), BX
	SHLQ $2, BX
	MOVQ v_base+56(FP), R13
	MOVQ d+88(FP), R8
	MOVQ R8, DX
	IMULQ $4, DX
	SHLQ $2, R8
	MOVQ d+88(FP), R14
	SHRQ $4, R14
	JZ   axpy6F32AVX2_done
	CMPQ n+80(FP), $0
	JEQ  axpy6F32AVX2_done
axpy6F32AVX2_chunk:
	AXPY6Y_LOAD
	MOVQ R12, R9
	LEAQ (R12)(BX*2), R10
	ADDQ BX, R10
	MOVQ R13, SI
	MOVQ n+80(FP), CX
axpy6F32AVX2_p:
	VMOVUPS (SI), Y12
	VMOVUPS 32(SI), Y13
	AXPY6Y_FMA(Y12, Y13)
	ADDQ $4, R9
	ADDQ $4, R10
	ADDQ DX, SI
	DECQ CX
	JNZ  axpy6F32AVX2_p
	AXPY6Y_STORE
	ADDQ $64, DI
	ADDQ $64, R13
	DECQ R14
	JNZ  axpy6F32AVX2_chunk
axpy6F32AVX2_done:
	VZEROUPPER
	RET

// func axpy6F16AVX2(acc []float32, w []float32, ws int, v []uint16, n, d int)
//
// axpy6F32AVX512's sums with 8-float vectors: 16 columns of the six rows in 12
// accumulators (d a multiple of 16).
TEXT ·axpy6F16AVX2(SB), NOSPLIT, $0-96
	MOVQ acc_base+0(FP), DI
	MOVQ w_base+24(FP), R12
	MOVQ ws+48(FP), BX
	SHLQ $2, BX
	MOVQ v_base+56(FP), R13
	MOVQ d+88(FP), R8
	MOVQ R8, DX
	IMULQ $2, DX
	SHLQ $2, R8
	MOVQ d+88(FP), R14
	SHRQ $4, R14
	JZ   axpy6F16AVX2_done
	CMPQ n+80(FP), $0
	JEQ  axpy6F16AVX2_done
	MOVQ n+80(FP), AX
	IMULQ DX, AX                 // AX: n rows, the prefetch distance
axpy6F16AVX2_chunk:
	LEAQ (DI)(R8*2), R11
	ADDQ R8, R11
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS (DI)(R8*1), Y2
	VMOVUPS 32(DI)(R8*1), Y3
	VMOVUPS (DI)(R8*2), Y4
	VMOVUPS 32(DI)(R8*2), Y5
	VMOVUPS (R11), Y6
	VMOVUPS 32(R11), Y7
	VMOVUPS (R11)(R8*1), Y8
	VMOVUPS 32(R11)(R8*1), Y9
	VMOVUPS (R11)(R8*2), Y10
	VMOVUPS 32(R11)(R8*2), Y11
	MOVQ R12, R9
	LEAQ (R12)(BX*2), R10
	ADDQ BX, R10
	MOVQ R13, SI
	MOVQ n+80(FP), CX
axpy6F16AVX2_p:
	PREFETCHT0 (SI)(AX*1) // the next tile's columns, as in axpy6F16AVX512
	VCVTPH2PS (SI), Y12
	VCVTPH2PS 16(SI), Y13
	VBROADCASTSS (R9), Y14
	VFMADD231PS Y14, Y12, Y0
	VFMADD231PS Y14, Y13, Y1
	VBROADCASTSS (R9)(BX*1), Y14
	VFMADD231PS Y14, Y12, Y2
	VFMADD231PS Y14, Y13, Y3
	VBROADCASTSS (R9)(BX*2), Y14
	VFMADD231PS Y14, Y12, Y4
	VFMADD231PS Y14, Y13, Y5
	VBROADCASTSS (R10), Y14
	VFMADD231PS Y14, Y12, Y6
	VFMADD231PS Y14, Y13, Y7
	VBROADCASTSS (R10)(BX*1), Y14
	VFMADD231PS Y14, Y12, Y8
	VFMADD231PS Y14, Y13, Y9
	VBROADCASTSS (R10)(BX*2), Y14
	VFMADD231PS Y14, Y12, Y10
	VFMADD231PS Y14, Y13, Y11
	ADDQ $4, R9
	ADDQ $4, R10
	ADDQ DX, SI
	DECQ CX
	JNZ  axpy6F16AVX2_p
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, (DI)(R8*1)
	VMOVUPS Y3, 32(DI)(R8*1)
	VMOVUPS Y4, (DI)(R8*2)
	VMOVUPS Y5, 32(DI)(R8*2)
	VMOVUPS Y6, (R11)
	VMOVUPS Y7, 32(R11)
	VMOVUPS Y8, (R11)(R8*1)
	VMOVUPS Y9, 32(R11)(R8*1)
	VMOVUPS Y10, (R11)(R8*2)
	VMOVUPS Y11, 32(R11)(R8*2)
	ADDQ $64, DI
	ADDQ $32, R13
	DECQ R14
	JNZ  axpy6F16AVX2_chunk
axpy6F16AVX2_done:
	VZEROUPPER
	RET

// func dequantInt8AVX512(dst []float32, src []int8, scales []float32)
//
// dequantInt8AVX2 in 16-lane vectors: a block of 32 in two, the same multiplications.
TEXT ·dequantInt8AVX512(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ src_base+24(FP), SI
	MOVQ scales_base+48(FP), BX
	XORQ AX, AX

dq5_32:
	MOVQ         CX, DX
	SUBQ         AX, DX
	CMPQ         DX, $32
	JLT          dq5_tail
	VBROADCASTSS (BX), Z15
	PREFETCHT0   2048(SI)(AX*1) // as in dequantInt8AVX2
	PREFETCHT0   256(BX)
	ADDQ         $4, BX
	VPMOVSXBD    (SI)(AX*1), Z0
	VPMOVSXBD    16(SI)(AX*1), Z1
	VCVTDQ2PS    Z0, Z0
	VCVTDQ2PS    Z1, Z1
	VMULPS       Z15, Z0, Z0
	VMULPS       Z15, Z1, Z1
	VMOVUPS      Z0, (DI)(AX*4)
	VMOVUPS      Z1, 64(DI)(AX*4)
	ADDQ         $32, AX
	JMP          dq5_32

dq5_tail:
	TESTQ  DX, DX
	JZ     dq5_done
	VMOVSS (BX), X15

dq5_1:
	MOVBQSX    (SI)(AX*1), DX
	VCVTSI2SSL DX, X0, X0
	VMULSS     X15, X0, X0
	VMOVSS     X0, (DI)(AX*4)
	INCQ       AX
	CMPQ       AX, CX
	JLT        dq5_1

dq5_done:
	VZEROUPPER
	RET

// func dequantQ4AVX512(dst []float32, src []byte, scales []uint16)
//
// dequantQ4AVX2 in 16-lane vectors: a block's low nibbles (values 0…15) in one, its
// high nibbles (16…31) in the other, the same arithmetic. Whole blocks only.
TEXT ·dequantQ4AVX512(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ src_base+24(FP), SI
	MOVQ scales_base+48(FP), BX
	SHRQ $5, CX
	JZ   q45_done
	VMOVDQU      nibble<>(SB), X14
	VPBROADCASTD eight<>(SB), Z13

q45_block:
	PREFETCHT0   1024(SI) // as in dequantQ4AVX2
	PREFETCHT0   64(BX)
	MOVWLZX      (BX), R8
	VMOVQ        R8, X15
	VCVTPH2PS    X15, X15
	VBROADCASTSS X15, Z15
	VMOVDQU      (SI), X0
	VPAND        X14, X0, X1
	VPSRLW       $4, X0, X2
	VPAND        X14, X2, X2
	VPMOVZXBD    X1, Z5
	VPMOVZXBD    X2, Z6
	VPSUBD       Z13, Z5, Z5
	VPSUBD       Z13, Z6, Z6
	VCVTDQ2PS    Z5, Z5
	VCVTDQ2PS    Z6, Z6
	VMULPS       Z15, Z5, Z5
	VMULPS       Z15, Z6, Z6
	VMOVUPS      Z5, (DI)
	VMOVUPS      Z6, 64(DI)
	ADDQ         $2, BX
	ADDQ         $16, SI
	ADDQ         $128, DI
	DECQ         CX
	JNZ          q45_block

q45_done:
	VZEROUPPER
	RET
