/*
 * bench/trace_count.c - what xfdr wrote, for the "trace" line of a benchmark row.
 *
 * usage: trace_count [-d] KEY PATH...
 *
 * Each PATH is an xfdr trace, or a folder whose *.xray files are all counted (one per process,
 * or one per thread with per_thread_files). Every file is verified and its function events
 * (entries, exits, tail exits; the drop-count buffer of thread 0 has none) are counted with
 * libxfdr_reader; its .map sidecar gives the drops and how many functions it names. Prints
 *
 *   trace <TAB> KEY <TAB> events <TAB> bytes of the .xray files <TAB> drops <TAB> note
 *
 * with the note "N files, functions F named M, elided E calls, overwritten O events, filtered C
 * calls" (bench/table.awk reads the last three: with the drops they account for every event the
 * run issued; a call left out by exclude= is two events).
 * -d deletes each file and its .map once counted (a benchmark row's trace is 100 MB+ and of no use
 * afterwards). Exit status 1 when a file does not verify (the line then says why), 2 on bad usage.
 */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xfdr/reader.h"

struct totals {
	unsigned long long events, bytes, drops, elided, overwritten, functions, named, files;
	unsigned long long filtered;
};

/*
 * The .map's totals: drops, calls elided, function records overwritten in ring mode (with the
 * events in the file they account for every event issued: doc/map-format.md), and how many
 * function lines carry a real name.
 */
static void read_map(const char *trace, struct totals *tot)
{
	char map[PATH_MAX + 8], line[8192], name[4096];
	unsigned long long n;
	unsigned id;
	FILE *f;

	snprintf(map, sizeof(map), "%s.map", trace);
	f = fopen(map, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "dropped\ttotal\t%llu", &n) == 1) {
			tot->drops += n;
		} else if (sscanf(line, "elided\t%llu", &n) == 1) {
			tot->elided += n;
		} else if (sscanf(line, "overwritten_events\t%llu", &n) == 1) {
			tot->overwritten += n;
		} else if (sscanf(line, "filtered_calls\t%llu", &n) == 1) {
			tot->filtered += n;
		} else if (sscanf(line, "function\t%u\t%4095[^\t]", &id, name) == 2) {
			tot->functions++;
			tot->named += name[0] != '<';
		}
	}
	fclose(f);
}

/* Returns 0, or -1 with err filled. */
static int count_file(const char *path, struct totals *tot, struct xfdr_error *err)
{
	struct xfdr_trace *t = NULL;
	struct xfdr_event_iter it;
	struct xfdr_event ev;
	struct stat st;
	int rc;

	if (xfdr_trace_open(path, &t, err) || xfdr_trace_verify(t, err) ||
	    xfdr_events_begin(t, XFDR_ORDER_FILE, &it, err)) {
		if (t)
			xfdr_trace_close(t);
		return -1;
	}
	while ((rc = xfdr_events_next(&it, &ev, err)) == 1)
		tot->events += ev.type == XFDR_EVENT_FUNCTION;
	xfdr_trace_close(t);
	if (rc < 0)
		return -1;
	if (stat(path, &st) == 0)
		tot->bytes += (unsigned long long)st.st_size;
	tot->files++;
	read_map(path, tot);
	return 0;
}

static void remove_trace(const char *path)
{
	char map[PATH_MAX + 8];

	unlink(path);
	snprintf(map, sizeof(map), "%s.map", path);
	unlink(map);
}

static int count_path(const char *path, int delete, struct totals *tot, struct xfdr_error *err)
{
	char file[PATH_MAX];
	struct dirent *de;
	size_t len;
	DIR *d;
	int rc = 0;

	d = opendir(path);
	if (!d) {
		rc = count_file(path, tot, err);
		if (delete)
			remove_trace(path);
		return rc;
	}
	while (rc == 0 && (de = readdir(d))) {
		len = strlen(de->d_name);
		if (len < 5 || strcmp(de->d_name + len - 5, ".xray") != 0)
			continue;
		snprintf(file, sizeof(file), "%s/%s", path, de->d_name);
		rc = count_file(file, tot, err);
		if (delete)
			remove_trace(file);
	}
	closedir(d);
	return rc;
}

int main(int argc, char **argv)
{
	struct totals tot;
	struct xfdr_error err;
	int delete = 0, i = 1;

	if (argc > 1 && !strcmp(argv[1], "-d")) {
		delete = 1;
		i++;
	}
	if (argc - i < 2) {
		fprintf(stderr, "usage: trace_count [-d] KEY PATH...\n");
		return 2;
	}
	memset(&tot, 0, sizeof(tot));
	memset(&err, 0, sizeof(err));
	for (int p = i + 1; p < argc; p++) {
		if (count_path(argv[p], delete, &tot, &err) != 0) {
			printf("trace\t%s\t-\t-\t-\tFAILED: %s\n", argv[i], err.text);
			return 1;
		}
	}
	if (tot.files == 0) {
		printf("trace\t%s\t-\t-\t-\tFAILED: no .xray file in the output\n", argv[i]);
		return 1;
	}
	printf("trace\t%s\t%llu\t%llu\t%llu\t%llu files, functions %llu named %llu, elided %llu "
	       "calls, overwritten %llu events, filtered %llu calls\n",
	       argv[i], tot.events, tot.bytes, tot.drops, tot.files, tot.functions, tot.named,
	       tot.elided, tot.overwritten, tot.filtered);
	return 0;
}
