/*
 * command/perfetto_write.c - how `xfdr convert --output-format=perfetto` writes the threads of
 * its inputs with the encoder of perfetto.c.
 *
 *   - One output: several threads at once (--jobs, default the CPUs online). Workers take the
 *     trace's threads in turn, each walking its thread once and writing it (packets,
 *     compression) into that thread's two parts of the output (command/ordered_out.h): its
 *     head (its tracks, its clock, and the calls begun before its first event, which the walk
 *     finds only at their exits) and its body, which waits in $TMPDIR until its head is
 *     written. So the file is the same bytes whatever the number of jobs. A process's track
 *     is described in the head of its first thread in the trace, whether or not that thread
 *     has events in the window.
 *   - Split (--split-size): every thread of every input at once, in time order
 *     (timeline_walk_by_time()), by one thread, into consecutive files, each a trace of its
 *     own.
 *
 * Memory: per job, the timeline's, the chunk and its compressed form, and the function names
 * its thread has interned (a hash of the distinct functions it calls); split, that of every
 * thread but one chunk. The parts written ahead of their turn wait in $TMPDIR.
 */
#include <pthread.h>
#include <stdlib.h>

#include "command/perfetto.h"

/* ---- Workers ------------------------------------------------------------------------------ */

/* A worker's progress through its thread's buffers, added to the input's. */
static void pf_progress(void *ctx, uint64_t done, uint64_t total)
{
	struct pf *s = ctx;
	struct pf_input *in = s->input;

	(void)total;
	pthread_mutex_lock(&in->lock);
	in->done += done - s->reported;
	s->reported = done;
	progress_update(&in->sink, in->done, in->total);
	pthread_mutex_unlock(&in->lock);
}

/* Write the input's threads, each the next not taken, until none is left or one fails. */
static void *pf_worker(void *arg)
{
	struct pf *s = arg;
	struct pf_input *in = s->input;
	const struct progress prog = {NULL, pf_progress, s};
	struct xfdr_error err;
	uint64_t i;
	int rc;

	s->file = in->file;
	while (!pf_failed(s)) {
		pthread_mutex_lock(&in->lock);
		i = in->next++;
		pthread_mutex_unlock(&in->lock);
		if (i >= in->threads)
			break;
		s->part = 2 * i + 1;
		s->seq = in->seq0 + 1 + (uint32_t)i;
		s->reported = 0;
		pb_reset(&s->head);
		if (in->announce[i]) {
			s->to_head = 1;
			pf_put_process(s, in->pid[i]);
			s->to_head = 0;
		}
		rc = timeline_walk_thread(s->file.t, i, in->win, &pf_ops, s, &prog, NULL, &err);
		if (rc == TIMELINE_OK) {
			pf_flush(s);
			pf_put_chunk(s, &s->head, s->part - 1);
		}
		if (rc != TIMELINE_OK || s->failed) {
			if (rc == TIMELINE_FAILED || (rc == TIMELINE_NO_MEMORY && !s->failed)) {
				pf_lock(s);
				cli_timeline_failed(s->file.t, rc, &err);
				pf_unlock(s);
			}
			s->failed = 1;
			ordered_abandon(in->parts);
			break;
		}
		/* The body waited in $TMPDIR for its head: now both go out. */
		if (ordered_end(in->parts, s->part - 1) || ordered_end(in->parts, s->part))
			s->failed = 1;
	}
	return NULL;
}

/*
 * Each thread's process, and which thread describes it: the first of the process's threads
 * in this input, unless an earlier input had the pid (seen, *nseen of them, grown). Returns
 * 0, or -1 out of memory.
 */
static int find_processes(struct pf_input *in, uint32_t **seen, size_t *nseen)
{
	struct xfdr_thread_info ti;
	uint64_t i;
	size_t k;

	if (!in->threads)
		return 0;
	if (in->threads > SIZE_MAX / sizeof(uint32_t) ||
	    !(in->pid = malloc((size_t)in->threads * sizeof(uint32_t))) ||
	    !(in->announce = calloc((size_t)in->threads, 1)))
		return -1;
	for (i = 0; i < in->threads && !xfdr_trace_thread(in->file.t, i, &ti); i++) {
		uint32_t *v;

		in->pid[i] = pf_thread_pid(&in->file, &ti);
		for (k = 0; k < *nseen && (*seen)[k] != in->pid[i]; k++)
			;
		if (k < *nseen)
			continue;
		if (!(v = realloc(*seen, (*nseen + 1) * sizeof(*v))))
			return -1;
		*seen = v;
		v[(*nseen)++] = in->pid[i];
		in->announce[i] = 1;
	}
	return 0;
}

/* The threads of input `in` written by `jobs` workers at once (the calling thread one of them). */
static int put_threads(struct pf_input *in, struct pf *workers, unsigned jobs, struct cli_out *out)
{
	pthread_t tid[CONVERT_PERFETTO_JOBS_MAX];
	unsigned started = 0, k;
	int failed = 0;

	if (!in->threads)
		return 0;
	if (!(in->parts = ordered_out_new(out, 2 * in->threads)))
		return -1;
	/* Fewer threads than asked for, if the system gives fewer: each takes more of the work. */
	while (started + 1 < jobs &&
	       !pthread_create(&tid[started], NULL, pf_worker, &workers[started + 1]))
		started++;
	pf_worker(&workers[0]);
	for (k = 0; k < started; k++)
		pthread_join(tid[k], NULL);
	for (k = 0; k < jobs; k++)
		failed |= workers[k].failed;
	failed |= ordered_failed(in->parts);
	ordered_out_free(in->parts);
	in->parts = NULL;
	return failed ? -1 : 0;
}

/* The inputs' threads, jobs at once, input after input. Returns CLI_OK or CLI_FAIL. */
static int put_inputs(struct pf_input *input, const struct cli_input *in, size_t n, unsigned jobs,
		      struct cli_out *out)
{
	struct pf workers[CONVERT_PERFETTO_JOBS_MAX] = {{0}};
	struct xfdr_error err;
	uint32_t *seen = NULL; /* the processes described */
	size_t nseen = 0, i;
	unsigned k;
	int rc = CLI_OK;

	for (k = 0; k < jobs && rc == CLI_OK; k++) {
		workers[k] = (struct pf){.input = input};
		workers[k].out = &workers[k].own;
		workers[k].own.max = PF_CHUNK_BYTES;
		if (input->compress && !(workers[k].own.zip = malloc(sizeof(struct pf_zip)))) {
			cli_error("out of memory");
			rc = CLI_FAIL;
		}
	}
	for (i = 0; i < n && rc == CLI_OK; i++) {
		cli_timeline_file_set(&input->file, &in[i]);
		input->win = input->wins ? &input->wins[i] : NULL;
		input->next = 0;
		input->done = 0;
		input->total = xfdr_trace_buffer_count(in[i].t);
		if (xfdr_trace_threads(in[i].t, &input->threads, &err)) {
			cli_timeline_failed(in[i].t, TIMELINE_FAILED, &err);
			rc = CLI_FAIL;
		} else if (find_processes(input, &seen, &nseen)) {
			cli_error("out of memory");
			rc = CLI_FAIL;
		} else if (put_threads(input, workers,
				       jobs < input->threads ? jobs : (unsigned)input->threads,
				       out)) {
			rc = CLI_FAIL;
		}
		free(input->pid);
		free(input->announce);
		input->pid = NULL;
		input->announce = NULL;
		/* Sequences number on from file to file. */
		input->seq0 += (uint32_t)input->threads;
	}
	for (k = 0; k < jobs; k++)
		pf_free(&workers[k]);
	free(seen);
	return rc;
}

/* ---- Split: every thread at once, in time order ------------------------------------------- */

/*
 * The inputs into the parts of input->split, each a trace of its own: its processes' and
 * threads' tracks described, the calls open at a cut ended there and begun again in the next
 * part. A writer per thread, all with one chunk, which for small parts is smaller than
 * PF_CHUNK_BYTES: a part's size is known each time a chunk goes out (see pf_ops_split).
 * Returns CLI_OK or CLI_FAIL.
 */
static int put_split(struct pf_input *input, const struct cli_input *in, size_t n)
{
	struct pf_chunk out = {.max = PF_CHUNK_BYTES};
	struct xfdr_trace **t;
	struct pf *th = NULL;
	void **ctxs = NULL;
	struct xfdr_error err;
	size_t *input_of, total, k;
	int rc = TIMELINE_NO_MEMORY, failed = 0;

	if (out.max > input->split->size / 16)
		out.max = input->split->size / 16;
	if (cli_timeline_threads(in, n, &t, &input_of, &total))
		return CLI_FAIL;
	if ((!input->compress || (out.zip = malloc(sizeof(*out.zip)))) &&
	    (th = calloc(total + 1, sizeof(*th))) && (ctxs = calloc(total + 1, sizeof(*ctxs)))) {
		for (k = 0; k < total; k++) {
			th[k] = (struct pf){.input = input, .out = &out};
			th[k].seq = PF_SEQ_PROCESSES + 1 + (uint32_t)k;
			cli_timeline_file_set(&th[k].file, &in[input_of[k]]);
			ctxs[k] = &th[k];
		}
		rc = timeline_walk_by_time(t, n, input->wins, &pf_ops_split, ctxs, &input->sink,
					   NULL, &err);
		if (rc == TIMELINE_OK && total)
			pf_flush(&th[0]);
	}
	cli_timeline_failed(t[0], rc, &err);
	for (k = 0; th && k < total; k++) {
		failed |= th[k].failed;
		pf_free(&th[k]);
	}
	pf_chunk_free(&out);
	free(th);
	free(ctxs);
	free(t);
	free(input_of);
	free(input->described.pid);
	return rc != TIMELINE_OK || failed ? CLI_FAIL : CLI_OK;
}

int convert_perfetto(const struct cli_input *in, size_t n, const struct window *win, int compress,
		     unsigned jobs, struct cli_out *out, struct split_out *split,
		     struct cli_progress *prog)
{
	struct pf_input input = {.wins = win, .compress = compress, .split = split};
	int rc;

	if (cli_timeline_base(in, n, &input.base))
		return CLI_FAIL;
	input.src = srcline_new();
	if (!input.src) {
		cli_error("out of memory");
		return CLI_FAIL;
	}
	jobs = jobs < 1 ? 1 : jobs > CONVERT_PERFETTO_JOBS_MAX ? CONVERT_PERFETTO_JOBS_MAX : jobs;
	pthread_mutex_init(&input.lock, NULL);
	input.sink = cli_progress_sink(prog);
	input.seq0 = PF_SEQ_PROCESSES;
	rc = split ? put_split(&input, in, n) : put_inputs(&input, in, n, jobs, out);
	pthread_mutex_destroy(&input.lock);
	cli_source_notes(input.src);
	srcline_free(input.src);
	return rc != CLI_OK || (split ? split->o : out)->err ? CLI_FAIL : CLI_OK;
}
