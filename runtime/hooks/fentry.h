/*
 * runtime/hooks/fentry.h - inspection of the -pg -mfentry hooks (fentry.c), for the runtime's
 * own tests (tests/unit/runtime): hidden like every runtime symbol, so libxfdr.so never
 * exports them; a test linking libxfdr.a reaches them. The hooks themselves have no callers
 * but gcc's code: they are named in fentry.c only.
 *
 * fentry_inspect_key_started - 1 once a thread has begun creating the thread-exit key that
 *   releases each thread's shadow stack.
 * fentry_inspect_key_usable - creates that key if needed (as a thread's first recorded entry
 *   does) and 1 when this thread can hold a value under it.
 */
#ifndef XFDR_RUNTIME_HOOKS_FENTRY_H
#define XFDR_RUNTIME_HOOKS_FENTRY_H

int fentry_inspect_key_started(void);
int fentry_inspect_key_usable(void);

#endif /* XFDR_RUNTIME_HOOKS_FENTRY_H */
