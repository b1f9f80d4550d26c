#include "textflag.h"

// func lines(start, count uintptr)
TEXT ·lines(SB), NOSPLIT, $0-16
	MOVQ start+0(FP), AX
	MOVQ count+8(FP), CX
	TESTQ CX, CX
	JZ done
loop:
	PREFETCHT0 (AX)
	ADDQ $64, AX
	DECQ CX
	JNZ loop
done:
	RET
