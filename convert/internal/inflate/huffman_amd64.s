//go:build !purego

#include "textflag.h"

// Table entry kinds (inflate.go): literal 0x00, length 0x20, end 0x40, link 0x60, invalid 0x80.
#define KIND_MASK $0xe0
#define KIND_LENGTH $0x20
#define KIND_LINK $0x60
// outLimit (inflate.go): windowSize + outChunk.
#define OUT_LIMIT $0x48000

// REFILL is huffman's loop head: leave unless w < outLimit and eight input bytes are
// buffered, then OR them into bb above its nb bits and count the whole bytes taken.
#define REFILL \
	CMPQ R12, OUT_LIMIT; \
	JGE exit; \
	LEAQ 8(R10), CX; \
	CMPQ CX, 0(SP); \
	JGT exit; \
	MOVQ (R13)(R10*1), CX; \
	SHLXQ R9, CX, CX; \
	ORQ CX, R8; \
	MOVQ $63, CX; \
	SUBQ R9, CX; \
	SHRQ $3, CX; \
	ADDQ CX, R10; \
	ORQ $56, R9

// LITERALS writes the one or two literals of entry AX, takes its bits, and looks up the
// next entry into AX.
#define LITERALS \
	MOVL AX, DI; \
	ANDL $31, DI; \
	MOVL AX, CX; \
	SHRL $16, CX; \
	MOVW CX, (SI)(R12*1); \
	MOVL AX, CX; \
	SHRL $8, CX; \
	ANDL $3, CX; \
	ADDQ CX, R12; \
	SHRXQ AX, R8, R8; \
	SUBQ DI, R9; \
	MOVQ R8, AX; \
	ANDQ $0x7ff, AX; \
	MOVL (DX)(AX*4), AX

// func huffmanFast(in *[unitSize]byte, out *[outSize]byte, lit, dist *uint32, bb uint64, nb uint, pos, end, w int) (uint64, uint, int, int)
//
// Registers: R8 bb, R9 nb, R10 pos, R12 w, R13 in, SI out, DX lit, BX dist; AX, CX, DI, R11
// scratch; 0(SP) end, 8(SP) a match's length.
TEXT ·huffmanFast(SB), NOSPLIT, $16-104
	MOVQ in+0(FP), R13
	MOVQ out+8(FP), SI
	MOVQ lit+16(FP), DX
	MOVQ dist+24(FP), BX
	MOVQ bb+32(FP), R8
	MOVQ nb+40(FP), R9
	MOVQ pos+48(FP), R10
	MOVQ end+56(FP), AX
	MOVQ AX, 0(SP)
	MOVQ w+64(FP), R12

	// Refill first: bb may hold fewer than 11 bits here; after a refill every lookup
	// below has its index bits (see huffmanFast).
	REFILL
	MOVQ R8, AX
	ANDQ $0x7ff, AX
	MOVL (DX)(AX*4), AX
	JMP dispatch

top:
	// AX is the entry of the next symbol, looked up before this refill: its index bits
	// were in bb already (see huffmanFast). Leaving here leaves that symbol untaken.
	REFILL

dispatch:
	// nb >= 56 here: every symbol's bits are buffered.
	MOVL AX, CX
	ANDL KIND_MASK, CX
	JNZ notliteral
	// One or two literals, then up to two more entries of literals without a refill
	// (at most 15+11+11 bits taken, so at least 19 are left).
	LITERALS
	TESTL KIND_MASK, AX
	JNZ top
	LITERALS
	TESTL KIND_MASK, AX
	JNZ top
	LITERALS
	JMP top

litlink:
	// AX = lit[AX>>16 + (bb>>11)&(1<<(AX>>8&15)-1)]
	MOVL AX, CX
	SHRL $8, CX
	ANDL $15, CX
	MOVQ R8, DI
	SHRQ $11, DI
	BZHIQ CX, DI, DI
	SHRL $16, AX
	ADDQ AX, DI
	MOVL (DX)(DI*4), AX
	JMP dispatch

notliteral:
	// A link to a longer literal or length code, or a length (anything else is huffman's
	// to handle), then a distance; every bit they take is buffered (at most 48 of the 56 or
	// more), so only a bad distance code or a distance before the output's start leaves the
	// symbol to huffman, untaken.
	CMPL CX, KIND_LINK
	JEQ litlink
	CMPL CX, KIND_LENGTH
	JNE exit
	MOVL AX, DI
	ANDL $31, DI
	MOVL AX, CX
	SHRL $8, CX
	ANDL $15, CX
	SHRXQ DI, R8, R11
	BZHIQ CX, R11, R11
	SHRL $16, AX
	ADDL AX, R11
	MOVQ R11, 8(SP)
	ADDQ CX, DI
	// DI = used: the distance code's bits start there.
	SHRXQ DI, R8, AX
	ANDQ $0xff, AX
	MOVL (BX)(AX*4), AX
	MOVL AX, CX
	ANDL KIND_MASK, CX
	CMPL CX, KIND_LINK
	JEQ distlink

distentry:
	CMPL CX, KIND_LENGTH
	JNE exit
	MOVL AX, CX
	ANDL $31, CX
	ADDQ CX, DI
	MOVL AX, CX
	SHRL $8, CX
	ANDL $15, CX
	SHRXQ DI, R8, R11
	BZHIQ CX, R11, R11
	SHRL $16, AX
	ADDQ AX, R11
	ADDQ CX, DI
	// R11 = distance, DI = all the bits of the length and distance.
	CMPQ R11, R12
	JA exit
	SHRXQ DI, R8, R8
	SUBQ DI, R9
	MOVQ R12, AX
	SUBQ R11, AX
	MOVQ 8(SP), CX
	LEAQ (R12)(CX*1), DI
	CMPQ R11, $8
	JB near

	// Eight bytes at a time: each load is of bytes already final (the distance is 8 or
	// more); the last store may run up to 7 bytes past the match, into output not yet
	// decoded (the buffer has maxMatch+windowSize beyond outLimit).
far:
	MOVQ (SI)(AX*1), CX
	MOVQ CX, (SI)(R12*1)
	ADDQ $8, AX
	ADDQ $8, R12
	CMPQ R12, DI
	JB far
	MOVQ DI, R12
	JMP next

near:
	MOVB (SI)(AX*1), CX
	MOVB CX, (SI)(R12*1)
	INCQ AX
	INCQ R12
	CMPQ R12, DI
	JB near

next:
	// At most 48 bits were taken since the refill: the next entry's 11 are there.
	MOVQ R8, AX
	ANDQ $0x7ff, AX
	MOVL (DX)(AX*4), AX
	JMP top

distlink:
	// AX = dist[AX>>16 + (bb>>(used+8))&(1<<(AX>>8&15)-1)]
	MOVL AX, CX
	SHRL $8, CX
	ANDL $15, CX
	LEAQ 8(DI), R11
	SHRXQ R11, R8, R11
	BZHIQ CX, R11, R11
	SHRL $16, AX
	ADDQ AX, R11
	MOVL (BX)(R11*4), AX
	MOVL AX, CX
	ANDL KIND_MASK, CX
	JMP distentry

exit:
	MOVQ R8, ret+72(FP)
	MOVQ R9, ret1+80(FP)
	MOVQ R10, ret2+88(FP)
	MOVQ R12, ret3+96(FP)
	RET
