//go:build !purego

#include "textflag.h"

DATA lowByte<>+0(SB)/8, $0x000000ff000000ff
DATA lowByte<>+8(SB)/8, $0x000000ff000000ff
GLOBL lowByte<>(SB), RODATA|NOPTR, $16

// 19595, 7471 per (r-g, b-g) word pair: luminance less g, scaled by 2^16.
DATA coefY<>+0(SB)/8, $0x1d2f4c8b1d2f4c8b
DATA coefY<>+8(SB)/8, $0x1d2f4c8b1d2f4c8b
GLOBL coefY<>(SB), RODATA|NOPTR, $16

// -5528, 16384: half of Cb's -11056(r-g) + 32768(b-g).
DATA coefCb<>+0(SB)/8, $0x4000ea684000ea68
DATA coefCb<>+8(SB)/8, $0x4000ea684000ea68
GLOBL coefCb<>(SB), RODATA|NOPTR, $16

// 16384, -2664: half of Cr's 32768(r-g) - 5328(b-g).
DATA coefCr<>+0(SB)/8, $0xf5984000f5984000
DATA coefCr<>+8(SB)/8, $0xf5984000f5984000
GLOBL coefCr<>(SB), RODATA|NOPTR, $16

DATA half16<>+0(SB)/8, $0x0000800000008000
DATA half16<>+8(SB)/8, $0x0000800000008000
GLOBL half16<>(SB), RODATA|NOPTR, $16

DATA half15<>+0(SB)/8, $0x0000400000004000
DATA half15<>+8(SB)/8, $0x0000400000004000
GLOBL half15<>(SB), RODATA|NOPTR, $16

DATA c128<>+0(SB)/8, $0x0000008000000080
DATA c128<>+8(SB)/8, $0x0000008000000080
GLOBL c128<>(SB), RODATA|NOPTR, $16

DATA two<>+0(SB)/8, $0x0000000200000002
DATA two<>+8(SB)/8, $0x0000000200000002
GLOBL two<>(SB), RODATA|NOPTR, $16

// GROUP converts the four RGBA pixels at src: their luminances to yoff(DX), their clamped
// Cb and Cr with op (MOVO for a block's top row, PADDL for its bottom one) into cbacc and
// cracc. X0-X3 are scratch; X9-X15 hold the constants.
#define GROUP(src, yoff, cbacc, cracc, op) \
	MOVOU   src, X0; \
	MOVO    X0, X1; \
	PAND    X15, X1; \
	MOVO    X0, X2; \
	PSRLL   $8, X2; \
	PAND    X15, X2; \
	PSRLL   $16, X0; \
	PAND    X15, X0; \
	PSUBL   X2, X1; \
	PSUBL   X2, X0; \
	PSLLL   $16, X1; \
	PSRLL   $16, X1; \
	PSLLL   $16, X0; \
	POR     X1, X0; \
	MOVO    X0, X3; \
	PMADDWL X14, X3; \
	PADDL   X11, X3; \
	PSRAL   $16, X3; \
	PADDL   X2, X3; \
	MOVOU   X3, yoff(DX); \
	MOVO    X0, X3; \
	PMADDWL X13, X3; \
	PADDL   X10, X3; \
	PSRAL   $15, X3; \
	PADDL   X9, X3; \
	MOVO    X3, X1; \
	PSRLL   $8, X1; \
	PSUBL   X1, X3; \
	op      X3, cbacc; \
	PMADDWL X12, X0; \
	PADDL   X10, X0; \
	PSRAL   $15, X0; \
	PADDL   X9, X0; \
	MOVO    X0, X1; \
	PSRLL   $8, X1; \
	PSUBL   X1, X0; \
	op      X0, cracc

// PAIRS stores ((a0+a1)+2)>>2, ((a2+a3)+2)>>2, ((b0+b1)+2)>>2, ((b2+b3)+2)>>2 to dst:
// the 2x2 sums of the columns summed in a and b.
#define PAIRS(a, b, dst) \
	MOVO   a, X8; \
	SHUFPS $0x88, b, a; \
	SHUFPS $0xdd, b, X8; \
	PADDL  X8, a; \
	MOVOU  two<>(SB), X1; \
	PADDL  X1, a; \
	PSRAL  $2, a; \
	MOVOU  a, dst

// func rgbaRowsFast(p0, p1 *[64]byte, y *[blockSize + 16]int32, cb, cr *[8]int32)
TEXT ·rgbaRowsFast(SB), NOSPLIT, $0-40
	MOVQ  p0+0(FP), SI
	MOVQ  p1+8(FP), DI
	MOVQ  y+16(FP), DX
	MOVQ  cb+24(FP), R8
	MOVQ  cr+32(FP), R9
	MOVOU lowByte<>(SB), X15
	MOVOU coefY<>(SB), X14
	MOVOU coefCb<>(SB), X13
	MOVOU coefCr<>(SB), X12
	MOVOU half16<>(SB), X11
	MOVOU half15<>(SB), X10
	MOVOU c128<>(SB), X9

	// Pixels 0-7: the left luminance block.
	GROUP(0(SI), 0, X4, X5, MOVO)
	GROUP(0(DI), 32, X4, X5, PADDL)
	GROUP(16(SI), 16, X6, X7, MOVO)
	GROUP(16(DI), 48, X6, X7, PADDL)
	PAIRS(X4, X6, 0(R8))
	PAIRS(X5, X7, 0(R9))

	// Pixels 8-15: the right one.
	GROUP(32(SI), 256, X4, X5, MOVO)
	GROUP(32(DI), 288, X4, X5, PADDL)
	GROUP(48(SI), 272, X6, X7, MOVO)
	GROUP(48(DI), 304, X6, X7, PADDL)
	PAIRS(X4, X6, 16(R8))
	PAIRS(X5, X7, 16(R9))
	RET
