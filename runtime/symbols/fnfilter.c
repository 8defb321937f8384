/*
 * runtime/symbols/fnfilter.c - the include= and exclude= lists (see fnfilter.h).
 *
 * The lists are copied into static storage and split in place; each pattern keeps a flag
 * raised the first time a function matched it, for fnfilter_report_unmatched().
 *
 * Naming an address needs the symbol tables: one namer (namer.h) for the process, behind a
 * lock word holding its holder's pid and tid. Another thread waits (sched_yield(): a lookup
 * takes microseconds, the first of a file milliseconds). A signal handler nested in a lookup
 * of its own thread cannot wait: it names the address from a snapshot of its own, taken and
 * released at once. A fork child finds a lock its parent's thread held with the parent's pid:
 * that lookup will never end here, so the child takes the lock and a fresh namer.
 */
#include <errno.h>
#include <fnmatch.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <libiberty/demangle.h>

#include "runtime/base/compiler.h"
#include "runtime/base/print.h"
#include "runtime/symbols/fnfilter.h"
#include "runtime/symbols/namer.h"
#include "runtime/symbols/patterns.h"
#include "runtime/symbols/symbolizer.h"

/* The longest demangled name matched; a longer one is matched as far as it goes. */
#define DEMANGLED_MAX 1024

struct pattern_list {
	char text[PATTERNS_TEXT_MAX]; /* as given */
	char split[PATTERNS_TEXT_MAX];
	const char *patterns[PATTERNS_MAX];
	uint32_t matched[PATTERNS_MAX];
	uint32_t count;
};

/* a call to fnfilter_configure() set the lists; they never change after */
uint32_t fnfilter_active;

static struct pattern_list lists[FNFILTER_LISTS];
static uint64_t left_out;
static uint32_t unmatched_reported;

static uint64_t namer_owner; /* pid << 32 | tid of the thread naming; 0: free */
static struct sym_namer namer;

static const char *const list_names[FNFILTER_LISTS] = {"include", "exclude"};

static int same_text(const struct pattern_list *l, const char *text)
{
	return !strcmp(l->text, text ? text : "");
}

int fnfilter_configure(const char *include, const char *exclude)
{
	const char *given[FNFILTER_LISTS] = {include, exclude};
	const char *why;
	int i, n;

	if (xfdr_load_acquire(&fnfilter_active))
		return same_text(&lists[FNFILTER_INCLUDE], include) &&
			       same_text(&lists[FNFILTER_EXCLUDE], exclude)
			   ? 0
			   : -EBUSY;
	for (i = 0; i < FNFILTER_LISTS; i++)
		if (patterns_check(given[i], &why))
			return -EINVAL;
	if ((!include || !*include) && (!exclude || !*exclude))
		return 0; /* nothing set: a later init may still set the lists */
	for (i = 0; i < FNFILTER_LISTS; i++) {
		struct pattern_list *l = &lists[i];
		size_t len = given[i] ? strlen(given[i]) : 0;

		memcpy(l->text, given[i] ? given[i] : "", len + 1);
		memcpy(l->split, l->text, len + 1);
		n = len ? patterns_split(l->split, l->patterns, &why) : 0;
		l->count = n > 0 ? (uint32_t)n : 0;
	}
	/* pairs with the acquire loads of readers: the lists before "active" */
	xfdr_store_release(&fnfilter_active, 1u);
	return 0;
}

const char *fnfilter_text(enum fnfilter_list list)
{
	if ((unsigned)list >= FNFILTER_LISTS || !xfdr_load_acquire(&fnfilter_active))
		return "";
	return lists[list].text;
}

/* Does one of the names match a pattern of l? Every pattern that matches is marked. */
static XFDR_NOINSTR int list_matches(struct pattern_list *l, const char *const *names,
				     unsigned name_count)
{
	unsigned i, k;
	int any = 0;

	for (i = 0; i < l->count; i++) {
		for (k = 0; k < name_count; k++) {
			if (!fnmatch(l->patterns[i], names[k], 0)) {
				if (!xfdr_load_relaxed(&l->matched[i]))
					xfdr_store_relaxed(&l->matched[i], 1u);
				any = 1;
				break;
			}
		}
	}
	return any;
}

struct demangled {
	char text[DEMANGLED_MAX];
	size_t len;
};

static XFDR_NOINSTR void demangled_put(const char *s, size_t n, void *opaque)
{
	struct demangled *d = opaque;
	size_t room = sizeof(d->text) - 1 - d->len;

	if (n > room)
		n = room;
	memcpy(d->text + d->len, s, n);
	d->len += n;
	d->text[d->len] = '\0';
}

/* The demangled name of a C++ symbol into d (options: DMGL_*); 0 when it is not one. */
static XFDR_NOINSTR int demangle(const char *symbol, int options, struct demangled *d)
{
	d->len = 0;
	d->text[0] = '\0';
	if (strncmp(symbol, "_Z", 2))
		return 0;
	return cplus_demangle_v3_callback(symbol, options, demangled_put, d) && d->len;
}

XFDR_NOINSTR int fnfilter_keeps_name(const char *symbol)
{
	struct demangled full, bare;
	const char *names[3];
	unsigned n = 0;
	int kept;

	/* pairs with the release in fnfilter_configure(): the lists before "active" */
	if (!xfdr_load_acquire(&fnfilter_active))
		return 1;
	if (symbol) {
		names[n++] = symbol;
		if (demangle(symbol, DMGL_PARAMS | DMGL_ANSI, &full))
			names[n++] = full.text;
		if (demangle(symbol, DMGL_ANSI, &bare))
			names[n++] = bare.text;
	}
	kept = !lists[FNFILTER_INCLUDE].count || list_matches(&lists[FNFILTER_INCLUDE], names, n);
	/* matched against both lists whatever the include list said: every match is marked */
	if (list_matches(&lists[FNFILTER_EXCLUDE], names, n))
		kept = 0;
	return kept;
}

static XFDR_NOINSTR uint64_t self_id(void)
{
	return (uint64_t)(uint32_t)getpid() << 32 | (uint32_t)syscall(SYS_gettid);
}

/* Take the namer: 1, or 0 when this thread holds it already (a nested signal handler). */
static XFDR_NOINSTR int namer_take(uint64_t me)
{
	uint64_t cur = xfdr_load_relaxed(&namer_owner);

	for (;;) {
		if (cur == me)
			return 0;
		if (cur && (uint32_t)(cur >> 32) == (uint32_t)(me >> 32)) {
			sched_yield();
			cur = xfdr_load_relaxed(&namer_owner);
			continue;
		}
		/* free, or held by a thread of the process we were forked from */
		if (xfdr_cas(&namer_owner, &cur, me)) {
			if (cur)
				sym_namer_forget(&namer);
			return 1;
		}
	}
}

XFDR_NOINSTR int fnfilter_keeps_addr(uintptr_t addr)
{
	uint64_t me = self_id();
	struct sym_result r;
	int kept;

	if (!fnfilter_on())
		return 1;
	if (!namer_take(me)) {
		struct sym_namer own = {0};

		sym_namer_lookup(&own, addr, &r);
		kept = fnfilter_keeps_name(r.name);
		sym_namer_close(&own);
		return kept;
	}
	sym_namer_lookup(&namer, addr, &r);
	kept = fnfilter_keeps_name(r.name);
	/* pairs with the acquire of the next taker's compare-exchange */
	xfdr_store_release(&namer_owner, 0u);
	return kept;
}

XFDR_NOINSTR void fnfilter_count_left_out(void)
{
	xfdr_add_relaxed(&left_out, (uint64_t)1);
}

uint64_t fnfilter_functions_left_out(void)
{
	return xfdr_load_relaxed(&left_out);
}

void fnfilter_report_unmatched(void)
{
	char text[1024];
	struct pr_buf b = PR_BUF_INIT(text);
	unsigned i, k, n = 0;

	if (!fnfilter_on() || !xfdr_cas(&unmatched_reported, &(uint32_t){0}, 1u))
		return;
	for (k = 0; k < FNFILTER_LISTS; k++) {
		for (i = 0; i < lists[k].count; i++) {
			if (xfdr_load_relaxed(&lists[k].matched[i]))
				continue;
			pr_str(&b, n++ ? ", " : "");
			pr_str(&b, list_names[k]);
			pr_char(&b, '=');
			pr_str(&b, lists[k].patterns[i]);
		}
	}
	if (!n)
		return;
	pr_str(&b, n == 1 ? ": this pattern" : ": these patterns");
	pr_str(&b, " matched no function called while recording (names as the .map shows them, "
		   "C++ ones also demangled)");
	pr_line(&b);
}
