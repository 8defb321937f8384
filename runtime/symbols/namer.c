/*
 * runtime/symbols/namer.c - one address at a time, over a kept snapshot (see namer.h).
 */
#include <string.h>

#include "runtime/base/compiler.h"
#include "runtime/base/monotonic.h"
#include "runtime/symbols/namer.h"
#include "runtime/symbols/symbolizer.h"
#include "runtime/symbols/unload.h"

/* A namer whose fresh snapshot still had no file at an address waits this long to try again. */
#define NAMER_RETRY_NS 1000000000ull

static XFDR_NOINSTR void namer_open(struct sym_namer *nm)
{
	nm->closes = unload_closes();
	nm->sym_ok = !sym_open(&nm->sym);
}

XFDR_NOINSTR void sym_namer_close(struct sym_namer *nm)
{
	if (nm->sym_ok)
		sym_close(&nm->sym);
	nm->sym_ok = 0;
}

XFDR_NOINSTR void sym_namer_forget(struct sym_namer *nm)
{
	memset(nm, 0, sizeof(*nm));
}

static XFDR_NOINSTR void namer_resolve(struct sym_namer *nm, uintptr_t addr, struct sym_result *r)
{
	memset(r, 0, sizeof(*r));
	if (nm->sym_ok)
		sym_lookup(&nm->sym, addr, r);
}

XFDR_NOINSTR void sym_namer_lookup(struct sym_namer *nm, uintptr_t addr, struct sym_result *r)
{
	int fresh = 0;

	if (nm->sym_ok && nm->closes != unload_closes())
		sym_namer_close(nm);
	if (!nm->sym_ok) {
		namer_open(nm);
		fresh = 1;
	}
	namer_resolve(nm, addr, r);
	if (!r->module && !fresh &&
	    (!nm->futile_ns || mono_ns() - nm->futile_ns >= NAMER_RETRY_NS)) {
		sym_namer_close(nm);
		namer_open(nm);
		namer_resolve(nm, addr, r);
		nm->futile_ns = r->module ? 0 : mono_ns();
	}
}
