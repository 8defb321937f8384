/*
 * runtime/flush/output.c - the names of the files a flush writes (see output.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/base/newfile.h"
#include "runtime/flush/output.h"

#define OUTPUT_NAME_TRIES 10000u

extern char *program_invocation_short_name;

struct flush_output flush_output;

static uint32_t next_seq; /* the <n> the next flush tries first */

int output_configure(const char *output, int per_thread_files)
{
	struct flush_output *o = &flush_output;
	const char *prog = program_invocation_short_name;
	const char *slash;
	struct stat st;
	size_t dir_len, i;
	char *p;

	o->per_thread_files = per_thread_files;
	o->dir[0] = '\0';
	o->prefix[0] = '\0';
	if (!output)
		output = "";
	if (*output && (output[strlen(output) - 1] == '/' ||
			(stat(output, &st) == 0 && S_ISDIR(st.st_mode)))) {
		dir_len = strlen(output);
		if (dir_len + 2 > sizeof(o->dir))
			return -ENAMETOOLONG;
		memcpy(o->dir, output, dir_len);
		if (output[dir_len - 1] != '/')
			o->dir[dir_len++] = '/';
		o->dir[dir_len] = '\0';
	} else if (*output) {
		slash = strrchr(output, '/');
		dir_len = slash ? (size_t)(slash - output) + 1 : 0;
		if (dir_len + 1 > sizeof(o->dir) ||
		    strlen(output + dir_len) + 1 > sizeof(o->prefix))
			return -ENAMETOOLONG;
		memcpy(o->dir, output, dir_len);
		o->dir[dir_len] = '\0';
		strcpy(o->prefix, output + dir_len);
		return 0;
	}
	p = o->prefix;
	strcpy(p, "xfdr-");
	strncat(p, prog && *prog ? prog : "program", sizeof(o->prefix) - 6);
	/* The program name becomes part of a file name: keep it to portable characters. */
	for (i = 5; p[i]; i++)
		if (!((p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z') ||
		      (p[i] >= '0' && p[i] <= '9') || p[i] == '.' || p[i] == '_' || p[i] == '-'))
			p[i] = '_';
	return 0;
}

/* dir + prefix + "-<pid>" into b, from its start. */
static void name_start(struct pr_buf *b, uint64_t pid)
{
	b->len = 0;
	b->truncated = 0;
	pr_str(b, flush_output.dir);
	pr_str(b, flush_output.prefix);
	pr_char(b, '-');
	pr_u64(b, pid);
}

static int name_end(struct pr_buf *b, const char *suffix)
{
	pr_str(b, suffix);
	pr_cstr(b);
	return b->truncated ? -ENAMETOOLONG : 0;
}

int output_name(struct pr_buf *b, uint64_t pid, uint32_t n, const char *suffix, int64_t tid)
{
	name_start(b, pid);
	pr_char(b, '-');
	pr_u64(b, n);
	if (tid >= 0) {
		pr_str(b, "-t");
		pr_u64(b, (uint64_t)tid);
	}
	return name_end(b, suffix);
}

int output_live_name(struct pr_buf *b, uint64_t pid, const char *suffix)
{
	name_start(b, pid);
	pr_str(b, "-live");
	return name_end(b, suffix);
}

/* "<final>.part" into b. */
static int part_name(struct pr_buf *b, const char *final)
{
	b->len = 0;
	b->truncated = 0;
	pr_str(b, final);
	pr_str(b, OUTPUT_PART_SUFFIX);
	pr_cstr(b);
	return b->truncated ? -ENAMETOOLONG : 0;
}

int output_create_part(const char *final)
{
	char part[PATH_MAX + sizeof(OUTPUT_PART_SUFFIX)];
	struct pr_buf b = PR_BUF_INIT(part);
	int rc = part_name(&b, final);

	return rc ? rc : newfile_create(part, O_WRONLY);
}

/* Is final, or its .part, taken? */
static int taken_with_part(const char *final)
{
	char part[PATH_MAX + sizeof(OUTPUT_PART_SUFFIX)];
	struct pr_buf b = PR_BUF_INIT(part);

	return newfile_taken(final) || (!part_name(&b, final) && newfile_taken(part));
}

/* Is "<final less suffix><sidecar>" (or its .part) taken? */
static int sidecar_taken(const char *final, const char *suffix, const char *sidecar)
{
	char name[PATH_MAX];
	struct pr_buf b = PR_BUF_INIT(name);

	pr_strn(&b, final, strlen(final) - strlen(suffix));
	pr_str(&b, sidecar);
	pr_cstr(&b);
	return !b.truncated && taken_with_part(name);
}

/*
 * Take <n> for this flush alone: two flushes of the process at once (the fatal path's beside
 * an ordinary one) never try the same name, so neither can find the other's .part free, nor
 * rename over what the other completed. On failure the first <n> tried is given back, unless
 * a flush took a later one meanwhile: the next flush tries it again, as if nothing was taken.
 */
static uint32_t seq_take(uint32_t *n)
{
	while (!__atomic_compare_exchange_n(&next_seq, n, *n + 1, 1, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED))
		;
	return *n;
}

static void seq_give_back(uint32_t first, uint32_t last)
{
	uint32_t expected = last + 1;

	__atomic_compare_exchange_n(&next_seq, &expected, first, 0, __ATOMIC_RELAXED,
				    __ATOMIC_RELAXED);
}

int output_create_unique(struct pr_buf *b, uint64_t pid, const char *suffix, const char *sidecar,
			 uint32_t *n_out)
{
	uint32_t tries, first, n = xfdr_load_relaxed(&next_seq);
	int fd, rc;

	first = seq_take(&n);
	*n_out = first;
	for (tries = 0; tries < OUTPUT_NAME_TRIES; tries++) {
		if (tries)
			n = seq_take(&n);
		rc = output_name(b, pid, n, suffix, -1);
		if (rc) {
			*n_out = n;
			seq_give_back(first, n);
			return rc;
		}
		/*
		 * A name some earlier process (same pid, before a reboot) completed is not ours,
		 * nor one someone put there (a link to a file to clobber); nor one whose sidecar
		 * is.
		 */
		if (newfile_taken(b->text) ||
		    (sidecar && sidecar_taken(b->text, suffix, sidecar))) {
			n++;
			continue;
		}
		fd = output_create_part(b->text);
		if (fd >= 0) {
			*n_out = n;
			return fd;
		}
		if (fd != -EEXIST) {
			*n_out = n;
			seq_give_back(first, n);
			return fd;
		}
		n++;
	}
	seq_give_back(first, n - 1);
	return -EEXIST;
}

int output_finish(const char *final, int rc)
{
	char part[PATH_MAX + sizeof(OUTPUT_PART_SUFFIX)];
	struct pr_buf b = PR_BUF_INIT(part);

	if (part_name(&b, final))
		return rc ? rc : -ENAMETOOLONG;
	if (!rc)
		rc = newfile_rename(part, final);
	if (rc)
		unlink(part);
	return rc;
}

int output_check_dir(void)
{
	const char *dir = flush_output.dir[0] ? flush_output.dir : ".";
	struct stat st;

	if (stat(dir, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	/* The effective ids create the files: in a set-user-ID program, not the real ones. */
	return faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS) ? -errno : 0;
}

void output_after_fork(void)
{
	xfdr_store_relaxed(&next_seq, 0u);
}
