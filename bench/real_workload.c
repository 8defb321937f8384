/*
 * bench/real_workload.c - the program of `make bench-real`: call-heavy C of the usual kind,
 * built uninstrumented and in every way of tracing it (bench/real_run.sh).
 *
 * Many small functions, as ordinary C has them: a generated text (a xorshift generator picks
 * syllables, words, separators), a tokenizer (one call per character class test), words
 * hashed byte by byte into an open-addressing table, a sample of the tokens sorted by a
 * recursive merge sort through small comparators, and arithmetic expressions generated and
 * evaluated by a recursive-descent parser. The functions that would sit in another file of a
 * real program are noinline (MODULE_API); whether a compiler inlines the small helpers is left
 * to it, as in any traced program (-finstrument-functions still records an inlined function,
 * XRay sleds and -pg do not).
 *
 * Deterministic: the same calls in the same order for the same scale (argument 1: the number
 * of words, default 100000). Every function of the work counts itself in real_calls, so the
 * program knows how many calls the source makes (main and the timing are not counted).
 * Prints "elapsed_ns N calls C result R": N the work alone (not start-up, not a flush at exit),
 * R a checksum of everything computed so the work cannot be optimized away.
 *
 * Built with -DREAL_XRAY_FDR for compiler-rt's XRay FDR runtime: FDR records only once the
 * program has called __xray_log_init_mode() and writes its file only when the program
 * finalizes and flushes it, as every program using FDR must; both stay outside the timed work.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/*
 * The functions a real program of this size would call from another file (no inlining across
 * files without LTO): kept calls. The small helpers stay static and inlinable.
 */
#define MODULE_API static __attribute__((noinline))

/* volatile: counted in every build the same way, never merged or hoisted by the optimizer */
static volatile uint64_t real_calls;
#define COUNT() (real_calls = real_calls + 1)

/* ---- the text ------------------------------------------------------------------------------ */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

MODULE_API uint32_t rng_next(void)
{
	COUNT();
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state >> 16);
}

static uint32_t rng_below(uint32_t n)
{
	COUNT();
	return rng_next() % n;
}

static const char *const syllables[] = {"ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo",
					"ze", "po", "da", "fi", "gu", "he", "ja", "qu"};

static char *emit_syllable(char *p, unsigned s)
{
	const char *q = syllables[s & 15];

	COUNT();
	while (*q)
		*p++ = *q++;
	return p;
}

/* Short words far more often than long ones, and a few syllables far more than the rest. */
MODULE_API char *emit_word(char *p, int capital)
{
	unsigned n = 1 + (rng_below(8) >= 5) + (rng_below(8) >= 6), i;
	char *start = p;

	COUNT();
	for (i = 0; i < n; i++)
		p = emit_syllable(p, rng_below(4) ? rng_below(6) : rng_below(16));
	if (capital)
		*start = (char)(*start - 'a' + 'A');
	return p;
}

static char *emit_separator(char *p, int *capital)
{
	uint32_t r = rng_below(16);

	COUNT();
	*capital = 0;
	if (r == 0) {
		*p++ = '.';
		*p++ = '\n';
		*capital = 1;
	} else if (r < 3) {
		*p++ = ',';
		*p++ = ' ';
	} else {
		*p++ = ' ';
	}
	return p;
}

MODULE_API size_t gen_text(char *buf, size_t words)
{
	char *p = buf;
	int capital = 1;
	size_t i;

	COUNT();
	for (i = 0; i < words; i++) {
		p = emit_word(p, capital);
		p = emit_separator(p, &capital);
	}
	*p = '\0';
	return (size_t)(p - buf);
}

/* ---- the tokenizer ------------------------------------------------------------------------- */

MODULE_API int is_letter(int c)
{
	COUNT();
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int to_lower(int c)
{
	COUNT();
	return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

/* The next word at or after *pos: its start and length (0 at the end); *pos moves past it. */
MODULE_API size_t next_token(const char *text, size_t len, size_t *pos, size_t *start)
{
	size_t i = *pos;

	COUNT();
	while (i < len && !is_letter(text[i]))
		i++;
	*start = i;
	while (i < len && is_letter(text[i]))
		i++;
	*pos = i;
	return i - *start;
}

/* ---- the table ----------------------------------------------------------------------------- */

#define TABLE_BITS 13
#define TABLE_SIZE (1u << TABLE_BITS)
#define WORD_MAX 16

struct entry {
	char word[WORD_MAX];
	unsigned len;
	unsigned count;
};

static struct entry table[TABLE_SIZE];
static unsigned table_used;

static uint32_t mix_byte(uint32_t h, int c)
{
	COUNT();
	return (h ^ (uint32_t)c) * 16777619u;
}

MODULE_API uint32_t hash_word(const char *s, size_t len)
{
	uint32_t h = 2166136261u;
	size_t i;

	COUNT();
	for (i = 0; i < len; i++)
		h = mix_byte(h, to_lower(s[i]));
	return h;
}

MODULE_API int same_word(const struct entry *e, const char *s, size_t len)
{
	size_t i;

	COUNT();
	if (e->len != len)
		return 0;
	for (i = 0; i < len; i++)
		if (e->word[i] != to_lower(s[i]))
			return 0;
	return 1;
}

static unsigned probe_next(unsigned i)
{
	COUNT();
	return (i + 1) & (TABLE_SIZE - 1);
}

MODULE_API struct entry *table_add(const char *s, size_t len)
{
	unsigned i = hash_word(s, len) & (TABLE_SIZE - 1);
	size_t k;

	COUNT();
	if (len >= WORD_MAX)
		len = WORD_MAX - 1;
	while (table[i].len && !same_word(&table[i], s, len))
		i = probe_next(i);
	if (!table[i].len) {
		for (k = 0; k < len; k++)
			table[i].word[k] = (char)to_lower(s[k]);
		table[i].len = (unsigned)len;
		table_used++;
	}
	table[i].count++;
	return &table[i];
}

/* ---- the sort ------------------------------------------------------------------------------ */

static int cmp_uint(unsigned a, unsigned b)
{
	COUNT();
	return (a > b) - (a < b);
}

MODULE_API int cmp_word(const struct entry *a, const struct entry *b)
{
	unsigned i;

	COUNT();
	for (i = 0; i < a->len && i < b->len; i++)
		if (a->word[i] != b->word[i])
			return cmp_uint((unsigned char)a->word[i], (unsigned char)b->word[i]);
	return cmp_uint(a->len, b->len);
}

/* Most frequent first, then alphabetical. */
MODULE_API int cmp_entry(const struct entry *a, const struct entry *b)
{
	int c;

	COUNT();
	c = cmp_uint(b->count, a->count);
	return c ? c : cmp_word(a, b);
}

MODULE_API void merge(struct entry **v, struct entry **tmp, size_t mid, size_t n)
{
	size_t i = 0, j = mid, k = 0;

	COUNT();
	while (i < mid && j < n)
		tmp[k++] = cmp_entry(v[i], v[j]) <= 0 ? v[i++] : v[j++];
	while (i < mid)
		tmp[k++] = v[i++];
	while (j < n)
		tmp[k++] = v[j++];
	for (i = 0; i < n; i++)
		v[i] = tmp[i];
}

MODULE_API void merge_sort(struct entry **v, struct entry **tmp, size_t n)
{
	COUNT();
	if (n < 2)
		return;
	merge_sort(v, tmp, n / 2);
	merge_sort(v + n / 2, tmp, n - n / 2);
	merge(v, tmp, n / 2, n);
}

/* ---- the expressions ----------------------------------------------------------------------- */

static char *emit_number(char *p)
{
	unsigned v = 1 + rng_below(99);

	COUNT();
	if (v >= 10)
		*p++ = (char)('0' + v / 10);
	*p++ = (char)('0' + v % 10);
	return p;
}

MODULE_API char *emit_expr(char *p, unsigned depth)
{
	static const char ops[] = "+-*%";

	COUNT();
	if (depth == 0 || rng_below(4) == 0)
		return emit_number(p);
	*p++ = '(';
	p = emit_expr(p, depth - 1);
	*p++ = ' ';
	*p++ = ops[rng_below(4)];
	*p++ = ' ';
	p = emit_expr(p, depth - 1);
	*p++ = ')';
	return p;
}

struct parser {
	const char *s;
};

static int peek(struct parser *ps)
{
	COUNT();
	while (*ps->s == ' ')
		ps->s++;
	return *ps->s;
}

static int is_digit(int c)
{
	COUNT();
	return c >= '0' && c <= '9';
}

static int64_t parse_expr(struct parser *ps);

MODULE_API int64_t parse_number(struct parser *ps)
{
	int64_t v = 0;

	COUNT();
	while (is_digit(*ps->s))
		v = v * 10 + (*ps->s++ - '0');
	return v;
}

MODULE_API int64_t parse_factor(struct parser *ps)
{
	int64_t v;

	COUNT();
	if (peek(ps) != '(')
		return parse_number(ps);
	ps->s++;
	v = parse_expr(ps);
	if (peek(ps) == ')')
		ps->s++;
	return v;
}

MODULE_API int64_t apply(int op, int64_t a, int64_t b)
{
	COUNT();
	switch (op) {
	case '+':
		return a + b;
	case '-':
		return a - b;
	case '*':
		return (a * b) % 1000003;
	default:
		return b ? a % b : a;
	}
}

MODULE_API int64_t parse_term(struct parser *ps)
{
	int64_t v = parse_factor(ps);
	int op;

	COUNT();
	while ((op = peek(ps)) == '*' || op == '%') {
		ps->s++;
		v = apply(op, v, parse_factor(ps));
	}
	return v;
}

static int64_t parse_expr(struct parser *ps)
{
	int64_t v = parse_term(ps);
	int op;

	COUNT();
	while ((op = peek(ps)) == '+' || op == '-') {
		ps->s++;
		v = apply(op, v, parse_term(ps));
	}
	return v;
}

#ifdef REAL_XRAY_FDR
/* compiler-rt's <xray/xray_log_interface.h> is C++ only: its extern "C" entry points */
int __xray_log_init_mode(const char *mode, const char *config);
int __xray_log_finalize(void);
int __xray_log_flushLog(void);
#endif

/* ---- the program --------------------------------------------------------------------------- */

static uint64_t run(size_t words)
{
	char *text = malloc(words * 8 + 16), expr[4096];
	struct entry **tok = malloc(words / 4 * sizeof(*tok) + sizeof(*tok));
	struct entry **tmp = malloc(words / 4 * sizeof(*tmp) + sizeof(*tmp));
	size_t len, pos = 0, start, n, ntok = 0, i;
	uint64_t sum = 0;
	struct parser ps;

	if (!text || !tok || !tmp) {
		fprintf(stderr, "real_workload: out of memory\n");
		exit(1);
	}
	len = gen_text(text, words);
	i = 0;
	while ((n = next_token(text, len, &pos, &start)) != 0) {
		struct entry *e = table_add(text + start, n);

		/* every fourth token joins the sorted sample */
		if ((i++ & 3) == 0 && ntok < words / 4)
			tok[ntok++] = e;
	}
	merge_sort(tok, tmp, ntok);
	for (i = 0; i < ntok; i++)
		sum = sum * 31 + tok[i]->count + tok[i]->word[0];
	for (i = 0; i < words / 50; i++) {
		*emit_expr(expr, 6) = '\0';
		ps.s = expr;
		sum = sum * 17 + (uint64_t)parse_expr(&ps);
	}
	free(text);
	free(tok);
	free(tmp);
	return sum ^ table_used;
}

int main(int argc, char **argv)
{
	long words = argc > 1 ? atol(argv[1]) : 100000;
	struct timespec t0, t1;
	uint64_t result;

	if (words < 4) {
		fprintf(stderr, "usage: real_workload [WORDS]\n");
		return 2;
	}
#ifdef REAL_XRAY_FDR
	/* "": XRAY_FDR_OPTIONS alone configures it; 2 is XRAY_LOG_INITIALIZED */
	if (__xray_log_init_mode("xray-fdr", "") != 2) {
		fprintf(stderr, "real_workload: __xray_log_init_mode failed\n");
		return 1;
	}
#endif
	clock_gettime(CLOCK_MONOTONIC, &t0);
	result = run((size_t)words);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("elapsed_ns %lld calls %llu result %llu\n",
	       (long long)(t1.tv_sec - t0.tv_sec) * 1000000000 + (t1.tv_nsec - t0.tv_nsec),
	       (unsigned long long)real_calls, (unsigned long long)result);
#ifdef REAL_XRAY_FDR
	fflush(stdout);
	/* 4 is XRAY_LOG_FINALIZED, 2 is XRAY_LOG_FLUSHED */
	if (__xray_log_finalize() != 4 || __xray_log_flushLog() != 2) {
		fprintf(stderr, "real_workload: FDR finalize or flush failed\n");
		return 1;
	}
#endif
	return 0;
}
