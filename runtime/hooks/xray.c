/*
 * runtime/hooks/xray.c - xfdr as the handler of clang's XRay sleds (-fxray-instrument).
 *
 * compiler-rt's XRay runtime (linked into the program by clang) owns the sleds and the
 * function ids; it calls one handler for entries and exits, one for entries that log their
 * first argument ([[clang::xray_log_args(1)]]) and one for __xray_customevent(). We record:
 *   ENTRY            -> Entry             LOG_ARGS_ENTRY + arg -> Entry_Args, CallArgument
 *   EXIT             -> Exit              LOG_ARGS_ENTRY alone -> Entry (arg1 handler unset)
 *   TAIL             -> Tail_Exit         custom event         -> CustomEventMarker + payload
 * with XRay's own function ids, so llvm-xray's -instr_map (the program) names them.
 *
 * XRay's headers are C++; the few entry points used are extern "C". compiler-rt links them
 * into the executable with hidden symbols, so the hook reaches them one of two ways:
 *   - libxfdr.a linked into the program: through the weak references below, resolved by the
 *     static link (NULL in a program without XRay);
 *   - libxfdr.so (-lxfdr): through the table the program exports (xray_api.h).
 * A libxfdr.so preloaded into a program not linked with it sees neither, and says so once.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>

#include "runtime/base/compiler.h"
#include "runtime/base/print.h"
#include "runtime/flush/map_functions.h"
#include "runtime/hooks/xray.h"
#include "runtime/hooks/xray_api.h"
#include "runtime/record/recorder.h"
#include "runtime/record/record_fast.h"
#include "runtime/symbols/fnfilter.h"
#include "runtime/symbols/symbolizer.h"
#include "xfdr/format.h"

/* XRayEntryType and XRayPatchingStatus of compiler-rt's xray_interface.h (stable ABI). */
enum xray_entry_type {
	XRAY_ENTRY = 0,
	XRAY_EXIT = 1,
	XRAY_TAIL = 2,
	XRAY_LOG_ARGS_ENTRY = 3,
};

enum xray_patching_status {
	XRAY_NOT_INITIALIZED = 0,
	XRAY_SUCCESS = 1,
	XRAY_ONGOING = 2,
	XRAY_FAILED = 3,
};

/* Defined by the program when it was linked with -lxfdr (runtime/link/xray_bridge.c). */
extern const struct xfdr_xray_api xfdr_xray_exe_api __attribute__((weak, visibility("default")));

static const struct xfdr_xray_api linked_api = {XFDR_XRAY_API_LINKED};

static int handlers_set;	/* our handlers are installed */
static uint32_t absent_checked; /* the "sleds but no reachable runtime" check ran */
static uint32_t registered;	/* the .map writer lists XRay's ids */
static uint32_t reported;	/* a patching failure was printed */

/*
 * The include= and exclude= options: which XRay ids are recorded, decided once, by name (one
 * byte an id, 1: kept). NULL when not decided yet, or without memory (every id is kept).
 */
static uint8_t *kept;
static uint32_t kept_count;

/* Entries and exits each get a copy of the record path with its action a constant. */
static XFDR_NOINSTR void xray_handler(int32_t fid, int type)
{
	switch (type) {
	case XRAY_ENTRY:
		rec_function(XFDR_FN_ENTER, (uint32_t)fid);
		return;
	case XRAY_EXIT:
		rec_function(XFDR_FN_EXIT, (uint32_t)fid);
		return;
	case XRAY_LOG_ARGS_ENTRY:
		rec_function(XFDR_FN_ENTER, (uint32_t)fid);
		return;
	case XRAY_TAIL:
		rec_function(XFDR_FN_TAIL_EXIT, (uint32_t)fid);
		return;
	default:
		return; /* event kinds this handler is never given */
	}
}

static XFDR_NOINSTR void xray_handler_arg1(int32_t fid, int type, uint64_t arg)
{
	(void)type;
	rec_function_args(XFDR_FN_ENTER_ARGS, (uint32_t)fid, &arg, 1);
}

/*
 * A program linked with an older bridge (a table of version 1) cannot have one function
 * patched: with filters, every sled is patched and these handlers leave out the functions
 * decided against, counting their calls as the other hooks do (filtered_calls).
 */
static XFDR_NOINSTR int left_out(int32_t fid, int type)
{
	if ((uint32_t)fid - 1u >= kept_count || kept[fid - 1])
		return 0;
	rec_count_filtered(type == XRAY_ENTRY || type == XRAY_LOG_ARGS_ENTRY ? XFDR_FN_ENTER
									     : XFDR_FN_EXIT);
	return 1;
}

static XFDR_NOINSTR void xray_handler_kept(int32_t fid, int type)
{
	if (!left_out(fid, type))
		xray_handler(fid, type);
}

static XFDR_NOINSTR void xray_handler_arg1_kept(int32_t fid, int type, uint64_t arg)
{
	if (!left_out(fid, type))
		xray_handler_arg1(fid, type, arg);
}

static XFDR_NOINSTR void xray_custom_handler(void *data, size_t bytes)
{
	rec_custom_event(data, bytes);
}

/* A table of version 1 (a program linked with an older bridge) lacks patch_function. */
static XFDR_NOINSTR int api_usable(const struct xfdr_xray_api *a)
{
	return (a->version == 1u || a->version == XFDR_XRAY_API_VERSION) && a->set_handler &&
	       a->set_handler_arg1 && a->set_customevent_handler && a->patch && a->unpatch;
}

static XFDR_NOINSTR int can_patch_one(const struct xfdr_xray_api *a)
{
	return a->version >= 2u && a->patch_function;
}

/* XRay's entry points as this process can reach them, NULL without XRay. */
static XFDR_NOINSTR const struct xfdr_xray_api *xray(void)
{
	if (&xfdr_xray_exe_api && api_usable(&xfdr_xray_exe_api))
		return &xfdr_xray_exe_api;
	return api_usable(&linked_api) ? &linked_api : NULL;
}

static XFDR_NOINSTR int patch_result(int status, const char *what)
{
	uint32_t expected = 0;

	switch (status) {
	case XRAY_SUCCESS:
		return 0;
	case XRAY_ONGOING:
		return -EBUSY;
	case XRAY_NOT_INITIALIZED:
		return -ENODEV;
	default:
		break;
	}
	if (xfdr_cas(&reported, &expected, 1u)) {
		char text[160];
		struct pr_buf b = PR_BUF_INIT(text);

		pr_str(&b, "XRay could not ");
		pr_str(&b, what);
		pr_str(&b, " its sleds: function events of XRay-instrumented code are missing");
		pr_line(&b);
	}
	return -EIO;
}

/*
 * The program has XRay sleds (an xray_instr_map section) but its XRay runtime is out of our
 * reach: compiler-rt builds it with hidden symbols, so a preloaded or shared libxfdr never
 * sees it. Said once, so that an empty trace is not a mystery.
 */
static void report_unreachable_xray(void)
{
	uint32_t expected = 0;

	if (!xfdr_cas(&absent_checked, &expected, 1u))
		return;
	if (sym_file_has_section("/proc/self/exe", "xray_instr_map")) {
		char text[256];
		struct pr_buf b = PR_BUF_INIT(text);

		pr_str(&b,
		       "this program has XRay sleds, but its XRay runtime is hidden from a "
		       "preloaded libxfdr: link the program with -lxfdr (pkg-config --libs xfdr) "
		       "to record them");
		pr_line(&b);
	}
}

/* XRay's ids run from 1 to its maximum; each names one function. Capped at 28 bits. */
static XFDR_NOINSTR uint32_t xray_function_count(void)
{
	const struct xfdr_xray_api *a = xray();
	size_t n;

	if (!a || !a->max_function_id || !a->function_address)
		return 0;
	n = a->max_function_id();
	return n > XFDR_FUNCTION_ID_MAX - 1 ? XFDR_FUNCTION_ID_MAX - 1 : (uint32_t)n;
}

static XFDR_NOINSTR uintptr_t xray_function_address(uint32_t id)
{
	return xray()->function_address((int32_t)id);
}

/* table: filled at the first install (xray_table_fill()), before registration. */
static struct map_fn_source xray_functions = {
    .name = "xray",
    .count = xray_function_count,
    .addr_of = xray_function_address,
};

/*
 * The addresses of every XRay id in one table of ours, which a core dump keeps (compiler-rt's
 * own map is out of a core's reader's reach): 8 bytes an id, once, as the live map's listing
 * of every id costs at the same moment. Without memory the core's ids stay unnamed.
 */
static void xray_table_fill(struct map_fn_source *src)
{
	uint32_t n = xray_function_count(), i;
	uint64_t *t;

	if (!n)
		return;
	t = mmap(NULL, (size_t)n * sizeof(*t), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (t == MAP_FAILED)
		return;
	for (i = 0; i < n; i++)
		t[i] = (uint64_t)xray_function_address(i + 1);
	src->table = t;
	src->table_count = n;
}

static void decide_functions(void)
{
	uint32_t n = xray_function_count(), id;
	uint8_t *k;

	if (!n)
		return;
	k = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (k == MAP_FAILED)
		return;
	for (id = 1; id <= n; id++) {
		uintptr_t addr = xray_function_address(id);

		if (!addr)
			continue;
		k[id - 1] = (uint8_t)fnfilter_keeps_addr(addr);
		if (!k[id - 1])
			fnfilter_count_left_out();
	}
	kept = k;
	kept_count = n;
}

/*
 * Only the functions the filters keep get their sleds patched: the others run as if XRay were
 * not there, and cost nothing. Returns as patch_result().
 */
static int patch_kept(const struct xfdr_xray_api *a)
{
	uint32_t id;
	int rc = 0, status;

	if (!kept)
		decide_functions();
	if (!kept)
		return patch_result(a->patch(), "patch");
	for (id = 1; id <= kept_count && !rc; id++) {
		if (!kept[id - 1])
			continue;
		status = a->patch_function((int32_t)id);
		rc = patch_result(status, "patch");
	}
	return rc;
}

int hooks_xray_install(void)
{
	const struct xfdr_xray_api *a = xray();
	int rc;

	if (!a) {
		report_unreachable_xray();
		return -ENOSYS;
	}
	if (!xfdr_load_acquire(&handlers_set)) {
		int in_handler = fnfilter_on() && !can_patch_one(a);

		if (in_handler)
			decide_functions();
		/*
		 * arg1 first: once the plain handler is set, an argument-logging sled would
		 * otherwise reach it and lose its argument. Each returns 0 before XRay's init.
		 */
		if (!a->set_handler_arg1(in_handler ? xray_handler_arg1_kept : xray_handler_arg1) ||
		    !a->set_handler(in_handler ? xray_handler_kept : xray_handler) ||
		    !a->set_customevent_handler(xray_custom_handler))
			return -ENODEV;
		xfdr_store_release(&handlers_set, 1);
	}
	if (fnfilter_on() && can_patch_one(a))
		rc = patch_kept(a);
	else
		rc = patch_result(a->patch(), "patch");
	if (!rc && xfdr_cas(&registered, &(uint32_t){0}, 1u)) {
		xray_table_fill(&xray_functions);
		map_fn_register(&xray_functions);
	}
	return rc;
}

int hooks_xray_uninstall(void)
{
	const struct xfdr_xray_api *a = xray();

	if (!a)
		return -ENOSYS;
	if (!xfdr_load_acquire(&handlers_set))
		return 0;
	return patch_result(a->unpatch(), "unpatch");
}
