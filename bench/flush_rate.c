/*
 * bench/flush_rate.c - the table of `make bench-flush`: how fast xfdr_flush() writes a trace,
 * beside how fast the same bytes go to the same disk through a plain write() loop.
 *
 * For each size (-m MiB) and buffer size (-b bytes), with per_thread_files off and on: a fresh
 * session (xfdr_init through the C API, a bounded pool of size / buffer + a few buffers,
 * waited until populated), two threads each fill half of the pool with XFDR_ENTER/XFDR_EXIT
 * pairs and stay alive, recording stops; one untimed flush (the first of a session may wait for
 * the clock calibration); then -r times: xfdr_flush() into -o DIR, timed with
 * CLOCK_MONOTONIC around the call alone, the files' bytes summed (stat) and deleted. Then the
 * disk's floor -r times: the same number of bytes written with one write() per buffer size
 * from a memory region as large as the pool (so the source is not in cache any more than
 * xfdr's buffers are), open to close timed, the file deleted. Neither side calls fsync: xfdr's
 * flush does not, so both measure what reaching the page cache (and whatever writeback the
 * kernel forces meanwhile) costs. MB/s = bytes / time, 1 MB = 10^6 bytes; medians of -r.
 *
 *   flush_rate -o DIR [-r REPS] [-m MIB]... [-b BUFFER_BYTES]...
 *
 * Prints the table on stdout. Exit status: 0; 1 when a session or a flush failed; 2 on bad
 * usage.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench/harness.h"
#include "bench/xfdr_row.h"
#include "xfdr/xfdr.h"

#define MIB ((uint64_t)1 << 20)
#define MAX_LIST 8
#define MAX_REPS 31
#define THREADS 2

struct recorder {
	pthread_barrier_t recorded; /* the threads have recorded: main may flush */
	pthread_barrier_t flushed;  /* main is done: the threads may exit */
	uint64_t events;	    /* enter/exit pairs per thread */
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/*
 * Threads stay alive until the flushes are done, so every flush finds their buffers as a
 * running program's would be: held by live threads.
 */
static void *record_main(void *arg)
{
	struct recorder *rec = arg;
	uint64_t i;

	for (i = 0; i < rec->events; i++) {
		XFDR_ENTER(1);
		XFDR_EXIT(1);
	}
	pthread_barrier_wait(&rec->recorded);
	pthread_barrier_wait(&rec->flushed);
	return NULL;
}

/* Bytes of every *.xray in dir (one per process, or one per thread); deletes them and .maps. */
static uint64_t collect(const char *dir)
{
	char path[PATH_MAX];
	struct dirent *de;
	struct stat st;
	uint64_t bytes = 0;
	size_t len;
	DIR *d = opendir(dir);

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		len = strlen(de->d_name);
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (len > 5 && !strcmp(de->d_name + len - 5, ".xray") && stat(path, &st) == 0)
			bytes += (uint64_t)st.st_size;
		unlink(path);
	}
	closedir(d);
	return bytes;
}

/* The disk's floor: bytes written with write() of buf_bytes each from src; ms, or -1. */
static double write_floor(const char *dir, const char *src, uint64_t src_bytes, uint64_t bytes,
			  uint64_t buf_bytes)
{
	char path[PATH_MAX];
	uint64_t off = 0;
	double t0, ms;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/write-floor.bin", dir);
	t0 = now_ms();
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return -1;
	while (off < bytes) {
		/* the file is a little larger than the pool (header, drop buffer): wrap around */
		n = write(fd, src + off % (src_bytes - buf_bytes),
			  bytes - off < buf_bytes ? bytes - off : buf_bytes);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (uint64_t)n;
	}
	close(fd);
	ms = now_ms() - t0;
	unlink(path);
	return off == bytes ? ms : -1;
}

struct row {
	double flush_ms[MAX_REPS], floor_ms[MAX_REPS];
	uint64_t bytes;
	int failed;
	char err[128];
};

static void measure(const char *dir, unsigned reps, uint64_t mib, uint64_t buf_bytes, int ptf,
		    const char *src, uint64_t src_bytes, struct row *row)
{
	struct xfdr_options o;
	struct recorder rec;
	pthread_t tid[THREADS];
	uint64_t bufs = mib * MIB / buf_bytes;
	char path[PATH_MAX];
	double t0;
	unsigned r, t;
	int rc;

	memset(row, 0, sizeof(*row));
	xfdr_options_default(&o);
	o.buffer_size = buf_bytes;
	o.buffer_max = bufs + 2 * THREADS + 2;
	o.output = dir;
	o.per_thread_files = ptf;
	o.flush_at_exit = 0;
	o.mode = XFDR_MODE_BOUNDED;
	rc = bench_xfdr_start(&o);
	if (rc != 0) {
		snprintf(row->err, sizeof(row->err), "FAILED: xfdr set-up: %s", strerror(-rc));
		row->failed = 1;
		return;
	}
	/*
	 * Each thread fills its half of the pool's buffers, less their preambles and stacks:
	 * pairs of 8-byte records.
	 */
	rec.events = bufs / THREADS * (buf_bytes / 8 - 16) / 2;
	pthread_barrier_init(&rec.recorded, NULL, THREADS + 1);
	pthread_barrier_init(&rec.flushed, NULL, THREADS + 1);
	for (t = 0; t < THREADS; t++)
		pthread_create(&tid[t], NULL, record_main, &rec);
	pthread_barrier_wait(&rec.recorded);
	xfdr_stop();
	/*
	 * One untimed flush first: the first flush of a young session may spin up to 20 ms for
	 * the clock calibration's baseline, which is not writing.
	 */
	rc = xfdr_flush(path, sizeof(path));
	collect(dir);
	for (r = 0; r < reps && !row->failed && rc == 0; r++) {
		t0 = now_ms();
		rc = xfdr_flush(path, sizeof(path));
		row->flush_ms[r] = now_ms() - t0;
		row->bytes = collect(dir);
		if (rc != 0) {
			snprintf(row->err, sizeof(row->err), "FAILED: xfdr_flush: %s",
				 strerror(-rc));
			row->failed = 1;
		}
	}
	if (rc != 0 && !row->failed) {
		snprintf(row->err, sizeof(row->err), "FAILED: xfdr_flush: %s", strerror(-rc));
		row->failed = 1;
	}
	pthread_barrier_wait(&rec.flushed);
	for (t = 0; t < THREADS; t++)
		pthread_join(tid[t], NULL);
	pthread_barrier_destroy(&rec.recorded);
	pthread_barrier_destroy(&rec.flushed);
	for (r = 0; r < reps && !row->failed; r++) {
		row->floor_ms[r] = write_floor(dir, src, src_bytes, row->bytes, buf_bytes);
		if (row->floor_ms[r] < 0) {
			snprintf(row->err, sizeof(row->err), "FAILED: write floor: %s",
				 strerror(errno));
			row->failed = 1;
		}
	}
}

int main(int argc, char **argv)
{
	uint64_t mibs[MAX_LIST], bufs[MAX_LIST], max_mib = 0, max_buf = 0, src_bytes;
	unsigned nmib = 0, nbuf = 0, reps = 3, i, j;
	const char *dir = NULL;
	struct row row;
	int opt, ptf, status = 0;
	char *src;

	while ((opt = getopt(argc, argv, "o:r:m:b:")) != -1) {
		switch (opt) {
		case 'o':
			dir = optarg;
			break;
		case 'r':
			reps = (unsigned)bench_parse_u64(optarg, "-r");
			break;
		case 'm':
			if (nmib == MAX_LIST)
				goto usage;
			mibs[nmib++] = bench_parse_u64(optarg, "-m");
			break;
		case 'b':
			if (nbuf == MAX_LIST)
				goto usage;
			bufs[nbuf] = bench_parse_u64(optarg, "-b");
			if (bufs[nbuf] < 4096 || bufs[nbuf] % 8)
				goto usage;
			nbuf++;
			break;
		default:
			goto usage;
		}
	}
	if (optind != argc || !dir || reps > MAX_REPS)
		goto usage;
	if (!nmib)
		mibs[nmib++] = 64;
	if (!nbuf)
		bufs[nbuf++] = 65536;
	for (i = 0; i < nmib; i++)
		max_mib = mibs[i] > max_mib ? mibs[i] : max_mib;
	for (i = 0; i < nbuf; i++)
		max_buf = bufs[i] > max_buf ? bufs[i] : max_buf;
	/* the floor's source: as large as the largest pool, every page touched */
	src_bytes = max_mib * MIB + max_buf;
	src = mmap(NULL, src_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (src == MAP_FAILED) {
		perror("flush_rate: mmap");
		return 1;
	}
	memset(src, 0x5a, src_bytes);

	printf("bench-flush: xfdr_flush() of a full pool (2 threads, bounded) into %s, beside one "
	       "write() per buffer of the same bytes; no fsync on either side; median of %u "
	       "(min..max), MB = 10^6 bytes\n",
	       dir, reps);
	printf("%7s %8s %-11s %9s %8s %19s %9s %19s %8s\n", "pool", "buffer", "files", "file MB",
	       "flush ms", "MB/s (min..max)", "write ms", "write() MB/s (..)", "xfdr/wr");
	for (i = 0; i < nmib; i++) {
		for (j = 0; j < nbuf; j++) {
			for (ptf = 0; ptf <= 1; ptf++) {
				double fm, wm, mb;
				char rate[40], wrate[40];

				measure(dir, reps, mibs[i], bufs[j], ptf, src, src_bytes, &row);
				if (row.failed) {
					printf("%4lluMiB %8llu %-11s %s\n",
					       (unsigned long long)mibs[i],
					       (unsigned long long)bufs[j],
					       ptf ? "per thread" : "one file", row.err);
					status = 1;
					continue;
				}
				qsort(row.flush_ms, reps, sizeof(double), bench_cmp_double);
				qsort(row.floor_ms, reps, sizeof(double), bench_cmp_double);
				fm = row.flush_ms[reps / 2];
				wm = row.floor_ms[reps / 2];
				mb = (double)row.bytes / 1e6;
				snprintf(rate, sizeof(rate), "%.0f (%.0f..%.0f)", mb / fm * 1e3,
					 mb / row.flush_ms[reps - 1] * 1e3,
					 mb / row.flush_ms[0] * 1e3);
				snprintf(wrate, sizeof(wrate), "%.0f (%.0f..%.0f)", mb / wm * 1e3,
					 mb / row.floor_ms[reps - 1] * 1e3,
					 mb / row.floor_ms[0] * 1e3);
				printf("%4lluMiB %8llu %-11s %9.1f %8.1f %19s %9.1f %19s %8.2f\n",
				       (unsigned long long)mibs[i], (unsigned long long)bufs[j],
				       ptf ? "per thread" : "one file", mb, fm, rate, wm, wrate,
				       wm / fm);
				fflush(stdout);
			}
		}
	}
	munmap(src, src_bytes);
	return status;

usage:
	fprintf(stderr, "usage: flush_rate -o DIR [-r REPS] [-m MIB]... [-b BUFFER_BYTES]...\n");
	return 2;
}
