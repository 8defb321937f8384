/*
 * bench/noop_fentry.S - empty __fentry__ and __return__, for the "no-op" row of gcc's
 * -pg -mfentry -minstrument-return=call.
 *
 * gcc calls __fentry__ before the function's prologue and __return__ right before its ret,
 * both at points where it assumes no call is made: every register may be live (arguments,
 * return values, rax, r10, r11). A bare ret touches none of them, so the row costs the two
 * calls and returns alone, the floor under xfdr's stubs (runtime/hooks/fentry.c).
 */
	.text

	.globl	__fentry__
	.type	__fentry__, @function
	.p2align 4
__fentry__:
	.cfi_startproc
#if defined(__CET__) && (__CET__ & 1)
	endbr64
#endif
	ret
	.cfi_endproc
	.size	__fentry__, .-__fentry__

	.globl	__return__
	.type	__return__, @function
	.p2align 4
__return__:
	.cfi_startproc
#if defined(__CET__) && (__CET__ & 1)
	endbr64
#endif
	ret
	.cfi_endproc
	.size	__return__, .-__return__

	.section .note.GNU-stack,"",@progbits
