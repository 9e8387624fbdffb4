//go:build !purego

#include "textflag.h"

// LANES adds four lanes of one pair of window rows to acc:
// acc += (v1*d1 + v2*d2) + (v3*d3 + v4*d4), lanes o/4 .. o/4+3, with v1..v4 at R8..R11 and
// d1..d4 at d, d+128, d+256, d+384 bytes from DX: synthWindowGo's operations in its order.
#define LANES(o, d, acc) \
	MOVUPS o(R8), X8; \
	MOVUPS (d+o)(DX), X9; \
	MULPS X9, X8; \
	MOVUPS o(R9), X10; \
	MOVUPS (d+128+o)(DX), X11; \
	MULPS X11, X10; \
	ADDPS X10, X8; \
	MOVUPS o(R10), X10; \
	MOVUPS (d+256+o)(DX), X11; \
	MULPS X11, X10; \
	MOVUPS o(R11), X12; \
	MOVUPS (d+384+o)(DX), X13; \
	MULPS X13, X12; \
	ADDPS X12, X10; \
	ADDPS X10, X8; \
	ADDPS X8, acc

// ROW points reg at V row (off + c) & 992 of the ring at SI.
#define ROW(c, reg) \
	LEAQ c(BX), reg; \
	ANDQ $992, reg; \
	SHLQ $2, reg; \
	ADDQ SI, reg

// ROWS adds window rows m and m+1 (m even) to X0-X7.
#define ROWS(m) \
	ROW(128*m, R8); \
	ROW(128*m+96, R9); \
	ROW(128*m+128, R10); \
	ROW(128*m+224, R11); \
	LANES(0, 256*m, X0); \
	LANES(16, 256*m, X1); \
	LANES(32, 256*m, X2); \
	LANES(48, 256*m, X3); \
	LANES(64, 256*m, X4); \
	LANES(80, 256*m, X5); \
	LANES(96, 256*m, X6); \
	LANES(112, 256*m, X7)

// func synthWindow(pcm *[32]float32, vv *[1024]float32, off int)
//
// X0-X7 hold pcm[0:32], four lanes each, from zero. Row offsets are masked with 992 (a
// multiple of 32 below 1024), so every read stays inside vv.
TEXT ·synthWindow(SB), NOSPLIT, $0-24
	MOVQ pcm+0(FP), DI
	MOVQ vv+8(FP), SI
	MOVQ off+16(FP), BX
	LEAQ ·synthDtbl(SB), DX
	XORPS X0, X0
	XORPS X1, X1
	XORPS X2, X2
	XORPS X3, X3
	XORPS X4, X4
	XORPS X5, X5
	XORPS X6, X6
	XORPS X7, X7
	ROWS(0)
	ROWS(2)
	ROWS(4)
	ROWS(6)
	MOVUPS X0, 0(DI)
	MOVUPS X1, 16(DI)
	MOVUPS X2, 32(DI)
	MOVUPS X3, 48(DI)
	MOVUPS X4, 64(DI)
	MOVUPS X5, 80(DI)
	MOVUPS X6, 96(DI)
	MOVUPS X7, 112(DI)
	RET
