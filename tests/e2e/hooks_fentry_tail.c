/*
 * tests/e2e/hooks_fentry_tail.c - a sibling call without __return__ before it: built with
 * -O2 -pg -mfentry but without -minstrument-return=call, tailer() enters through __fentry__
 * and jumps to leaf(), whose __fentry__ then finds tailer's frame at its own address: a tail
 * call (test_hooks_fentry.c expects "E tailer,T tailer,E leaf,X leaf").
 */
int leaf(int x);
int tailer(int x);

int tailer(int x)
{
	return leaf(x * 2);
}
