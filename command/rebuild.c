/*
 * command/rebuild.c - what the verbs that rebuild a trace (recover, core) share: their
 * common options and output names, the output created under a temporary name and renamed when
 * whole (only over a regular file; the temporary files removed when SIGINT, SIGTERM or SIGHUP
 * ends the verb), with its sidecar, and the summary of what was kept and dropped.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "command/cli.h"
#include "command/option_table.h"
#include "rebuild/file_io.h"
#include "rebuild/pool_image.h"

/* ---- Rebuilt traces: options and output names ------------------------------------------ */

int cli_rebuild_opts_parse(const struct cli_command *cmd, int argc, char **argv,
			   struct cli_rebuild_opts *o)
{
	int rc = cli_options_parse_one(cmd, argc, argv, &o->input);

	if (rc)
		return rc;
	if (o->output && !*o->output)
		return cli_usage("empty OUT");
	return 0;
}

int cli_map_name(const char *out, char *buf, size_t n)
{
	if ((size_t)snprintf(buf, n, "%s.map", out) >= n) {
		cli_error("%s.map: %s", out, strerror(ENAMETOOLONG));
		return CLI_FAIL;
	}
	return 0;
}

/* ---- New files, renamed into place ----------------------------------------------------- */

/* What the file of mode m is, for "OUT: a FIFO, not a regular file". */
static const char *file_kind(mode_t m)
{
	if (S_ISDIR(m))
		return "a directory";
	if (S_ISCHR(m))
		return "a character device";
	if (S_ISBLK(m))
		return "a block device";
	if (S_ISFIFO(m))
		return "a FIFO";
	if (S_ISSOCK(m))
		return "a socket";
	return "an unknown kind of file";
}

/*
 * May a new file be renamed over path? Yes (0) when nothing is there, or a regular file, or a
 * symbolic link to one (or to nothing: rename() replaces the link, never what it points to).
 * Anything else, a device such as /dev/null, a FIFO, a socket, a directory or a link to one of
 * them, is refused whatever --force says: one line "xfdr VERB: PATH: a FIFO, not a regular
 * file: not replaced", and CLI_FAIL.
 */
static int check_replaceable(const char *path)
{
	struct stat st;

	if (lstat(path, &st) != 0 || S_ISREG(st.st_mode))
		return 0; /* nothing there (creating it says why it cannot be), or a file */
	if (!S_ISLNK(st.st_mode)) {
		cli_error("%s: %s, not a regular file: not replaced", path, file_kind(st.st_mode));
		return CLI_FAIL;
	}
	/* rename() replaces the link itself; still, a link to a device or a folder is no output. */
	if (stat(path, &st) != 0) {
		if (errno == ENOENT)
			return 0; /* a dangling link */
		cli_error("%s: a symbolic link that cannot be followed (%s): not replaced", path,
			  strerror(errno));
		return CLI_FAIL;
	}
	if (S_ISREG(st.st_mode))
		return 0;
	cli_error("%s: a symbolic link to %s, not to a regular file: not replaced", path,
		  file_kind(st.st_mode));
	return CLI_FAIL;
}

/*
 * May OUT (or OUT.map) at path be written? 0 when nothing is there, or with force when
 * check_replaceable() allows it. Else reports and returns: CLI_FAIL for what is not a regular
 * file; CLI_USAGE for an existing file without force, "xfdr VERB: PATH exists (--force
 * replaces it)".
 */
static int refuse_existing(const char *path, int force)
{
	struct stat st;

	if (lstat(path, &st) != 0)
		return 0;
	if (check_replaceable(path))
		return CLI_FAIL;
	if (force)
		return 0;
	cli_error("%s exists (--force replaces it)", path);
	return CLI_USAGE;
}

int cli_check_rebuild_outputs(const char *out, const char *out_map, const char *const *inputs,
			      const char *which, int force)
{
	size_t i;
	int status;

	/* Refusing to replace a file is a usage error, as convert's "output is the input". */
	for (i = 0; inputs[i]; i++) {
		if (cli_same_file(out, inputs[i]) || cli_same_file(out_map, inputs[i])) {
			cli_error("%s: OUT would replace %s", out, which);
			return CLI_USAGE;
		}
	}
	status = refuse_existing(out, force);
	return status ? status : refuse_existing(out_map, force);
}

/*
 * A new output file, written under a temporary name beside its path ("PATH.tmp.XXXXXX", made
 * by mkstemp(3): a new file, mode 0600 like every trace the runtime writes, for what it holds)
 * and renamed over it once complete, so that an interrupted or failed run never leaves a
 * half-written file under the real name, and a link at PATH is replaced, never written through.
 * While one is open, SIGINT, SIGTERM and SIGHUP first remove the temporary files, then end the
 * process as they would have (the signal is raised again with its default action); a signal
 * ignored when xfdr started stays ignored.
 */
struct new_file {
	char tmp[4096];
	const char *path;
	int fd; /* -1 once committed or aborted */
};

/*
 * Temporary files and termination signals. Between mkstemp() and the rename, a new file exists
 * under its temporary name only; SIGINT, SIGTERM or SIGHUP there (^C, kill, a closed terminal)
 * would leave it behind. So while any is open, those signals run tmp_on_signal(), which removes
 * every temporary file open, puts the signal's default action back and raises it again: the
 * process still ends by that signal, as its parent expects. A signal the process was started
 * with ignored stays ignored. The list is changed with the three signals blocked, so the handler
 * sees each slot either empty or naming a file that exists (or no longer does, once renamed).
 */
static const int tmp_signals[] = {SIGINT, SIGTERM, SIGHUP};
#define TMP_SIGNAL_COUNT (sizeof(tmp_signals) / sizeof(tmp_signals[0]))
static const char *volatile tmp_open[4]; /* the tmp names of open new_files */
static struct sigaction tmp_old_action[TMP_SIGNAL_COUNT];
static unsigned tmp_open_count;

/* Context: a signal handler (unlink(), sigaction() and raise() are async-signal-safe). */
static void tmp_on_signal(int sig)
{
	struct sigaction dfl;
	size_t i;

	for (i = 0; i < sizeof(tmp_open) / sizeof(tmp_open[0]); i++) {
		if (tmp_open[i])
			unlink(tmp_open[i]);
	}
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	sigaction(sig, &dfl, NULL);
	/* Blocked until the handler returns, then delivered with the default action. */
	raise(sig);
}

static void tmp_block(sigset_t *old)
{
	sigset_t set;
	size_t i;

	sigemptyset(&set);
	for (i = 0; i < TMP_SIGNAL_COUNT; i++)
		sigaddset(&set, tmp_signals[i]);
	sigprocmask(SIG_BLOCK, &set, old);
}

/* With the signals blocked: name tmp in the list (NULL: none free, not cleaned on a signal). */
static void tmp_track(const char *tmp)
{
	struct sigaction sa;
	size_t i;

	for (i = 0; i < sizeof(tmp_open) / sizeof(tmp_open[0]) && tmp_open[i]; i++)
		;
	if (i == sizeof(tmp_open) / sizeof(tmp_open[0]))
		return;
	tmp_open[i] = tmp;
	if (tmp_open_count++)
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = tmp_on_signal;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < TMP_SIGNAL_COUNT; i++)
		sigaddset(&sa.sa_mask, tmp_signals[i]);
	for (i = 0; i < TMP_SIGNAL_COUNT; i++) {
		sigaction(tmp_signals[i], NULL, &tmp_old_action[i]);
		if (tmp_old_action[i].sa_handler != SIG_IGN)
			sigaction(tmp_signals[i], &sa, NULL);
	}
}

/* With the signals blocked: tmp is renamed or removed; the last one puts the old actions back. */
static void tmp_untrack(const char *tmp)
{
	size_t i;

	for (i = 0; i < sizeof(tmp_open) / sizeof(tmp_open[0]) && tmp_open[i] != tmp; i++)
		;
	if (i == sizeof(tmp_open) / sizeof(tmp_open[0]))
		return;
	tmp_open[i] = NULL;
	if (--tmp_open_count)
		return;
	for (i = 0; i < TMP_SIGNAL_COUNT; i++)
		sigaction(tmp_signals[i], &tmp_old_action[i], NULL);
}

/* Returns 0, or reports "xfdr VERB: PATH: cannot create: ..." and returns CLI_FAIL. */
static int new_file_open(struct new_file *f, const char *path)
{
	sigset_t old;
	int e;

	f->path = path;
	f->fd = -1;
	if ((size_t)snprintf(f->tmp, sizeof(f->tmp), "%s.tmp.XXXXXX", path) >= sizeof(f->tmp)) {
		cli_error("%s: cannot create: %s", path, strerror(ENAMETOOLONG));
		return CLI_FAIL;
	}
	tmp_block(&old);
	f->fd = mkostemp(f->tmp, O_CLOEXEC);
	e = errno;
	if (f->fd >= 0)
		tmp_track(f->tmp);
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (f->fd < 0) {
		cli_error("%s: cannot create: %s", path, strerror(e));
		return CLI_FAIL;
	}
	/* mkstemp() makes it 0600, the mode the runtime gives traces: they hold what it recorded.
	 */
	return 0;
}

/* Close and rename. Returns 0, or reports, removes the temporary file and returns CLI_FAIL. */
static int new_file_commit(struct new_file *f)
{
	sigset_t old;
	int closed = close(f->fd) == 0, e = closed ? 0 : errno;

	f->fd = -1;
	tmp_block(&old);
	if (closed && rename(f->tmp, f->path) != 0)
		e = errno;
	if (e)
		unlink(f->tmp);
	tmp_untrack(f->tmp);
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (e) {
		cli_error("%s: %s: %s", f->path, closed ? "cannot create" : "write error",
			  strerror(e));
		return CLI_FAIL;
	}
	return 0;
}

/* Close and remove the temporary file (nothing if already committed or aborted). */
static void new_file_abort(struct new_file *f)
{
	sigset_t old;

	if (f->fd < 0)
		return;
	close(f->fd);
	f->fd = -1;
	tmp_block(&old);
	unlink(f->tmp);
	tmp_untrack(f->tmp);
	sigprocmask(SIG_SETMASK, &old, NULL);
}

static int write_pool_trace(int fd, const char *out, struct rb_pool_result *res, void *ctx)
{
	struct xfdr_error err;

	if (rb_pool_rebuild(ctx, fd, out, res, &err) < 0) {
		fprintf(stderr, "%s\n", err.text);
		return CLI_FAIL;
	}
	return 0;
}

static int rebuild_files(const struct rb_pool_job *job, const char *out,
			 int (*write_map)(FILE *f, const struct rb_pool_result *res, void *ctx),
			 void *ctx, struct rb_pool_result *res)
{
	return cli_write_trace_and_map(out, write_pool_trace, (void *)job, write_map, ctx, res);
}

int cli_write_trace_and_map(const char *out,
			    int (*write_trace)(int fd, const char *out, struct rb_pool_result *res,
					       void *ctx),
			    void *trace_ctx,
			    int (*write_map)(FILE *f, const struct rb_pool_result *res, void *ctx),
			    void *ctx, struct rb_pool_result *res)
{
	struct new_file tf, mf;
	char map[4096], *text = NULL;
	size_t len = 0;
	sigset_t mask;
	FILE *f;
	int e;

	if ((size_t)snprintf(map, sizeof(map), "%s.map", out) >= sizeof(map)) {
		cli_error("%s.map: cannot create: %s", out, strerror(ENAMETOOLONG));
		return CLI_FAIL;
	}
	if (new_file_open(&tf, out))
		return CLI_FAIL;
	if (write_trace(tf.fd, out, res, trace_ctx)) {
		new_file_abort(&tf);
		return CLI_FAIL;
	}
	/* The sidecar is small: composed in memory, so one check covers every line. */
	f = open_memstream(&text, &len);
	if (!f) {
		cli_error("%s: cannot create: %s", map, strerror(errno));
		goto fail;
	}
	if (write_map(f, res, ctx) != 0) {
		fclose(f);
		goto fail;
	}
	if (fclose(f) != 0) {
		cli_error("%s: write error: %s", map, strerror(ENOMEM));
		goto fail;
	}
	if (new_file_open(&mf, map))
		goto fail;
	e = rb_pwrite_all(mf.fd, text, len, 0);
	if (e) {
		cli_error("%s: write error: %s", map, strerror(e));
		new_file_abort(&mf);
		goto fail;
	}
	/*
	 * Neither goes in place over anything but a regular file (checked again: it may have
	 * changed since the verb looked), and a termination signal waits until both are in place.
	 */
	tmp_block(&mask);
	if (check_replaceable(out) || check_replaceable(map)) {
		new_file_abort(&mf);
		new_file_abort(&tf);
		sigprocmask(SIG_SETMASK, &mask, NULL);
		goto fail_res;
	}
	if (new_file_commit(&tf)) {
		new_file_abort(&mf);
		sigprocmask(SIG_SETMASK, &mask, NULL);
		goto fail_res;
	}
	e = new_file_commit(&mf);
	sigprocmask(SIG_SETMASK, &mask, NULL);
	if (e)
		goto fail_res;
	free(text);
	return CLI_OK;
fail:
	new_file_abort(&tf);
fail_res:
	free(text);
	rb_pool_result_free(res);
	return CLI_FAIL;
}

static const char *plural(uint64_t n)
{
	return n == 1 ? "" : "s";
}

/* The summary; absent describes the buffers left out as RB_POOL_ABSENT. */
static void rebuild_report(const struct rb_pool_result *res, const char *out, const char *absent,
			   int best_effort)
{
	static const struct {
		enum rb_pool_verdict v;
		const char *why;
	} dropped[] = {
	    {RB_POOL_CLAIMING, "being claimed (preamble not yet complete)"},
	    {RB_POOL_EMPTY, "claimed, no preamble written yet"},
	    {RB_POOL_BAD_LENGTH, "the descriptor's used_bytes is beyond the buffer size"},
	    {RB_POOL_STALE, "stale bytes of an earlier use (the preamble is not the descriptor's)"},
	    {RB_POOL_BAD_PREAMBLE, "no valid NewBuffer, WallClockTime, NewCPUId at the start"},
	    {RB_POOL_ABSENT, NULL},
	    {RB_POOL_NO_ROOM, "no room left to close them with EndOfBuffer"},
	};
	size_t i;
	uint64_t n;

	cli_error("%llu buffer%s of %zu thread%s kept, of %llu in the pool",
		  (unsigned long long)res->kept, plural(res->kept), res->thread_count,
		  plural(res->thread_count), (unsigned long long)res->buffers);
	if (res->open_closed)
		cli_error("%llu open buffer%s closed at %s last complete record",
			  (unsigned long long)res->open_closed, plural(res->open_closed),
			  res->open_closed == 1 ? "its" : "their");
	if ((n = res->count[RB_POOL_FREE]))
		cli_error("%llu never-used buffer%s dropped", (unsigned long long)n, plural(n));
	for (i = 0; i < sizeof(dropped) / sizeof(dropped[0]); i++) {
		n = res->count[dropped[i].v];
		if (n)
			cli_error("%llu buffer%s dropped: %s", (unsigned long long)n, plural(n),
				  dropped[i].why ? dropped[i].why : absent);
	}
	if (res->tails_cut)
		cli_error("%llu torn tail%s cut (%llu bytes of incomplete or invalid records)",
			  (unsigned long long)res->tails_cut, plural(res->tails_cut),
			  (unsigned long long)res->tail_bytes_cut);
	if (best_effort && res->kept)
		cli_error("best effort: %llu buffer%s end at unwritten (zero) bytes, %llu at an "
			  "invalid record",
			  (unsigned long long)res->zero_ended, plural(res->zero_ended),
			  (unsigned long long)res->invalid_ended);
	if (res->hz_estimated)
		cli_error(
		    "TSC rate not recorded: estimated from the buffers' wall clocks as %llu Hz",
		    (unsigned long long)res->tsc_hz);
	else if (res->hz_assumed)
		cli_error("warning: TSC rate not recorded and the buffers span less than %u ms: "
			  "assuming %llu Hz (times in the trace are then only relative)",
			  RB_POOL_HZ_MIN_SPAN_US / 1000, (unsigned long long)res->tsc_hz);
	if (!res->kept)
		cli_error("no buffer held recorded events: the trace has a header only");
	cli_error("wrote %s", out);
}

void cli_map_value(FILE *f, const char *s)
{
	for (; *s; s++)
		fputc((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s, f);
}

int cli_map_generated(FILE *f, const struct cli_map_facts *m, const struct rb_pool_result *res)
{
	size_t i;

	fprintf(f, "xfdr-map\t1\npid\t%llu\ntrace\t", (unsigned long long)m->pid);
	cli_map_value(f, m->trace);
	fprintf(f,
		"\ntsc_hz\t%llu\nconstant_tsc\t%d\nnonstop_tsc\t%d\nbuffer_size\t%llu\n"
		"buffer_max\t%llu\nbuffers_written\t%llu\n",
		(unsigned long long)res->tsc_hz, !!m->constant_tsc, !!m->nonstop_tsc,
		(unsigned long long)m->buffer_bytes, (unsigned long long)m->buffer_count,
		(unsigned long long)res->kept);
	for (i = 0; i < res->thread_count; i++)
		fprintf(f, "thread\t%u\t%u\t<unknown>\t0\t0\t0\t0\t0\t0\t0\n",
			(unsigned)res->threads[i].tid, (unsigned)res->threads[i].thread_id);
	return 0;
}

/* ---- What became of each buffer ------------------------------------------------------------ */

static const char *const state_names[] = {"free", "owned", "full", "claiming"};

/* Callbacks for struct rb_pool_job: ctx is a struct cli_progress to update. */
static void note_progress(void *ctx, const struct rb_pool_note *n)
{
	cli_progress_update(ctx, n->done, n->total);
}

/* -v: "buffer 3: owned, used 88, claim 4, thread 1 (tid 1001): kept 80 bytes; stopped at ..." */
static void note_verbose(void *ctx, const struct rb_pool_note *n)
{
	char desc[160] = "", kept[48] = "";

	(void)ctx;
	if (n->have_desc)
		snprintf(desc, sizeof(desc), "%s, used %llu, claim %llu, thread %u (tid %u): ",
			 state_names[n->state & 3], (unsigned long long)n->used,
			 (unsigned long long)n->claim_seq, n->thread_id, n->tid);
	if (n->verdict == RB_POOL_KEPT)
		snprintf(kept, sizeof(kept), " %llu bytes", (unsigned long long)n->kept);
	cli_error("buffer %llu: %s%s%s%s%s", (unsigned long long)n->index, desc,
		  rb_pool_verdict_name(n->verdict), kept, n->why ? "; stopped at " : "",
		  n->why ? n->why : "");
}

/* ---- The whole rebuild --------------------------------------------------------------------- */

int cli_rebuild(struct rb_pool_job *job, const char *out,
		int (*write_map)(FILE *f, const struct rb_pool_result *res, void *ctx), void *ctx,
		const struct cli_rebuild_show *show)
{
	struct rb_pool_result res;
	struct cli_progress prog;
	int status;

	cli_progress_begin(&prog, show->progress_bytes, show->progress_what);
	if (show->verbose) {
		job->note = note_verbose;
	} else if (prog.on) {
		job->note = note_progress;
		job->note_ctx = &prog;
	}
	status = rebuild_files(job, out, write_map, ctx, &res);
	cli_progress_end(&prog);
	if (status)
		return status;
	rebuild_report(&res, out, show->absent, show->best_effort);
	rb_pool_result_free(&res);
	return CLI_OK;
}
