/*
 * bench/ways_workload.c - the workload of `make bench-ways`: a small stack-machine interpreter
 * built in every way of instrumenting C (bench/ways_run.sh). Its helpers (fetch, push, pop,
 * binop, the dispatch) are small enough that an optimizing compiler inlines them, as in a real
 * interpreter; a recursive native function (fib) keeps some real calls. Deterministic: the same
 * instructions and calls every run, for the iteration count given (argument 1).
 *
 * Prints "elapsed_ns N result R": the interpretation alone (not start-up or the flush at exit),
 * and a checksum so the work cannot be optimized away.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum op {
	OP_PUSH,  /* push the next word */
	OP_LOAD,  /* push vars[next] */
	OP_STORE, /* vars[next] = pop */
	OP_ADD,
	OP_SUB,
	OP_MUL,
	OP_MOD,
	OP_LT,	/* push (a < b) */
	OP_JZ,	/* pop; jump to next if zero */
	OP_JMP, /* jump to next */
	OP_FIB, /* push fib(pop) */
	OP_HALT,
};

#define STACK_MAX 64
#define VARS 4

struct vm {
	long stack[STACK_MAX];
	int sp;
	long vars[VARS];
	const int *code;
	int pc;
};

static int fetch(struct vm *m)
{
	return m->code[m->pc++];
}

static void push(struct vm *m, long v)
{
	m->stack[m->sp++] = v;
}

static long pop(struct vm *m)
{
	return m->stack[--m->sp];
}

static long binop(int op, long a, long b)
{
	switch (op) {
	case OP_ADD:
		return a + b;
	case OP_SUB:
		return a - b;
	case OP_MUL:
		return a * b;
	case OP_MOD:
		return b ? a % b : 0;
	default:
		return a < b;
	}
}

/* A real call tree: not inlined, recursive. */
static long fib(long n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

/* One instruction; returns 0 at OP_HALT. */
static int step(struct vm *m)
{
	int op = fetch(m);
	long a, b;

	switch (op) {
	case OP_PUSH:
		push(m, fetch(m));
		return 1;
	case OP_LOAD:
		push(m, m->vars[fetch(m)]);
		return 1;
	case OP_STORE:
		m->vars[fetch(m)] = pop(m);
		return 1;
	case OP_ADD:
	case OP_SUB:
	case OP_MUL:
	case OP_MOD:
	case OP_LT:
		b = pop(m);
		a = pop(m);
		push(m, binop(op, a, b));
		return 1;
	case OP_JZ:
		a = fetch(m);
		if (!pop(m))
			m->pc = (int)a;
		return 1;
	case OP_JMP:
		m->pc = m->code[m->pc];
		return 1;
	case OP_FIB:
		push(m, fib(pop(m) % 8));
		return 1;
	default:
		return 0;
	}
}

static long run(const int *code, long n)
{
	struct vm m = {.code = code};

	m.vars[0] = n;
	while (step(&m))
		;
	return m.vars[1];
}

/*
 * i = 0; acc = 0;
 * while (i < n) { acc = (acc * 31 + fib(i) + i) % 1000003; i = i + 1; }
 * vars: 0 n, 1 acc, 2 i
 */
/* clang-format off */
static const int program[] = {
	/*  0 */ OP_PUSH, 0, OP_STORE, 2, OP_PUSH, 0, OP_STORE, 1,
	/*  8 */ OP_LOAD, 2, OP_LOAD, 0, OP_LT, OP_JZ, 41,
	/* 15 */ OP_LOAD, 1, OP_PUSH, 31, OP_MUL, OP_LOAD, 2, OP_FIB, OP_ADD, OP_LOAD, 2, OP_ADD,
	/* 27 */ OP_PUSH, 1000003, OP_MOD, OP_STORE, 1,
	/* 32 */ OP_LOAD, 2, OP_PUSH, 1, OP_ADD, OP_STORE, 2, OP_JMP, 8,
	/* 41 */ OP_HALT,
};
/* clang-format on */

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000, result;
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	result = run(program, n);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("elapsed_ns %lld result %ld\n",
	       (long long)(t1.tv_sec - t0.tv_sec) * 1000000000ll + (t1.tv_nsec - t0.tv_nsec),
	       result);
	return 0;
}
