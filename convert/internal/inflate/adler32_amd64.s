//go:build !purego

#include "textflag.h"

// Byte i of a 32-byte block weighs 32-i in s2.
DATA adlerWeights<>+0(SB)/8, $0x191a1b1c1d1e1f20
DATA adlerWeights<>+8(SB)/8, $0x1112131415161718
DATA adlerWeights<>+16(SB)/8, $0x090a0b0c0d0e0f10
DATA adlerWeights<>+24(SB)/8, $0x0102030405060708
GLOBL adlerWeights<>(SB), RODATA|NOPTR, $32

DATA adlerOnes<>+0(SB)/8, $0x0001000100010001
DATA adlerOnes<>+8(SB)/8, $0x0001000100010001
DATA adlerOnes<>+16(SB)/8, $0x0001000100010001
DATA adlerOnes<>+24(SB)/8, $0x0001000100010001
GLOBL adlerOnes<>(SB), RODATA|NOPTR, $32

// HSUM sums the eight dwords of y (x is its low half) into r; t is scratch.
#define HSUM(y, x, t, r) \
	VEXTRACTI128 $1, y, t; \
	VPADDD t, x, x; \
	VPSHUFD $0x4e, x, t; \
	VPADDD t, x, x; \
	VPSHUFD $0xb1, x, t; \
	VPADDD t, x, x; \
	MOVL x, r

// func adler32AVX2(s1, s2 uint32, p []byte) (uint32, uint32)
TEXT ·adler32AVX2(SB), NOSPLIT, $0-40
	MOVL s1+0(FP), AX
	MOVL s2+4(FP), BX
	MOVQ p_base+8(FP), SI
	MOVQ p_len+16(FP), CX
	// s2 gains n*s1 for the s1 it starts with; the blocks add the rest.
	MOVL CX, DX
	IMULL AX, DX
	ADDL DX, BX
	VMOVDQU adlerWeights<>(SB), Y6
	VMOVDQU adlerOnes<>(SB), Y7
	VPXOR Y8, Y8, Y8
	VPXOR Y1, Y1, Y1 // the bytes' sum, in four 64-bit lanes
	VPXOR Y2, Y2, Y2 // the weighted sums, in eight 32-bit lanes
	VPXOR Y3, Y3, Y3 // Y1 before each block: times 32, what the blocks before add to s2
	SHRQ $5, CX
	JZ done

loop:
	VMOVDQU (SI), Y0
	VPADDD Y1, Y3, Y3
	VPSADBW Y8, Y0, Y4
	VPADDD Y4, Y1, Y1
	VPMADDUBSW Y6, Y0, Y5
	VPMADDWD Y7, Y5, Y5
	VPADDD Y5, Y2, Y2
	ADDQ $32, SI
	DECQ CX
	JNZ loop

done:
	HSUM(Y1, X1, X4, DX)
	ADDL DX, AX
	VPSLLD $5, Y3, Y3
	VPADDD Y3, Y2, Y2
	HSUM(Y2, X2, X4, DX)
	ADDL DX, BX
	VZEROUPPER
	MOVL AX, ret+32(FP)
	MOVL BX, ret1+36(FP)
	RET
