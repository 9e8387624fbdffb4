//go:build !purego

#include "textflag.h"

// expandRGB spreads four RGB pixels (12 bytes) over four 32-bit lanes, zero in the top byte.
DATA expandRGB<>+0(SB)/8, $0x8005040380020100
DATA expandRGB<>+8(SB)/8, $0x800b0a0980080706
GLOBL expandRGB<>(SB), RODATA|NOPTR, $16

// opaque is the alpha byte of four RGBA pixels.
DATA opaque<>+0(SB)/8, $0xff000000ff000000
DATA opaque<>+8(SB)/8, $0xff000000ff000000
GLOBL opaque<>(SB), RODATA|NOPTR, $16

// func predictRGBSSSE3(dst, row *byte, k int)
TEXT ·predictRGBSSSE3(SB), NOSPLIT, $0-24
	MOVQ  dst+0(FP), DI
	MOVQ  row+8(FP), SI
	MOVQ  k+16(FP), CX
	MOVOU expandRGB<>(SB), X7
	MOVOU opaque<>(SB), X6
	PXOR  X5, X5 // the previous pixel's sums in every lane

loop:
	MOVOU  (SI), X0
	PSHUFB X7, X0     // four pixels' differences, one a lane
	MOVO   X0, X1
	PSLLDQ $4, X1
	PADDB  X1, X0     // lane i: d[i] + d[i-1]
	MOVO   X0, X1
	PSLLDQ $8, X1
	PADDB  X1, X0     // lane i: d[0] + ... + d[i]
	PADDB  X5, X0     // plus the sums so far
	PSHUFD $0xff, X0, X5
	POR    X6, X0
	MOVOU  X0, (DI)
	ADDQ   $12, SI
	ADDQ   $16, DI
	SUBQ   $4, CX
	JNZ    loop
	RET
