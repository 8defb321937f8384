/*
 * command/perfetto.h - what `xfdr convert --output-format=perfetto` is made of, inside the
 * command: the encoder (perfetto.c: a thread's timeline as Perfetto's packets) and the ways
 * its threads are written (perfetto_write.c: several at once, each into its part of one file;
 * or all together in time order, into consecutive files).
 */
#ifndef XFDR_COMMAND_PERFETTO_H
#define XFDR_COMMAND_PERFETTO_H

#include <pthread.h>
#include <stdint.h>
#include <isa-l/igzip_lib.h>

#include "analysis/srcline.h"
#include "analysis/timeline.h"
#include "command/cli.h"
#include "command/ordered_out.h"
#include "command/protobuf.h"
#include "command/split_out.h"

#define PF_CHUNK_BYTES (256u << 10) /* packets per compressed chunk (Perfetto: under 512 KB) */
#define PF_CHUNK_HEAD 16u	    /* room before a compressed chunk for its packet's head */
#define PF_SEQ_PROCESSES 1u	    /* the sequence of the process tracks */

/*
 * ISA-L's igzip at level 1, a chunk at a time: on these packets it makes zlib's format at
 * 2.8 times libdeflate's level-1 speed and 5% smaller (588 against 212 MB/s on an AMD EPYC,
 * 0.215 against 0.225 of the input), and it picks its code by the CPU's features at run time.
 * Its state and work space are 360 KiB: one per writer, on the heap.
 */
#define PF_ZIP_LEVEL 1
#define PF_ZIP_LEVEL_BUF ISAL_DEF_LVL1_DEFAULT
struct pf_zip {
	struct isal_zstream z;
	uint8_t level_buf[PF_ZIP_LEVEL_BUF];
};

/* Packets on their way out, a chunk at a time (compressed first, if so). */
struct pf_chunk {
	struct pb_buf buf; /* the packets waiting */
	size_t max;	   /* bytes of packets in a chunk, at most */
	uint8_t *z;	   /* PF_CHUNK_HEAD bytes, then a chunk compressed */
	size_t z_cap;
	struct pf_zip *zip; /* the compressor (NULL: --compress=none) */
	int sent;	    /* a chunk went out since the split output last looked */
};

/* The names a sequence has interned: function id -> iid, open addressing; gen marks a slot
   as used by the current sequence, so a new sequence starts empty without clearing. */
struct pf_interned {
	uint32_t *fid, *iid, *gen;
	uint32_t cap, count, generation, next_iid;
};

/* What the writers of one input (or, split, of every input) share. */
struct pf_input {
	struct cli_timeline_file file; /* the input being written */
	uint64_t base;		       /* the first TSC of all inputs: time 0 */
	const struct window *wins;     /* each input's window (NULL: all) */
	const struct window *win;      /* the one of the input being written */
	struct srcline *src;	       /* functions' source lines; taken under lock */
	int compress;		       /* 1: deflate, 0: none */
	uint32_t seq0;		       /* thread i's sequence is seq0 + 1 + i */
	uint64_t threads;	       /* of the trace */
	uint32_t *pid;		       /* thread i's process */
	uint8_t *announce;	       /* thread i's part describes its process's track first */
	struct ordered_out *parts;     /* thread i's packets: parts 2i (head) and 2i+1 (body) */
	pthread_mutex_t lock;	       /* the fields below, and stderr */
	uint64_t next;		       /* the next thread to write */
	uint64_t done, total;	       /* progress: buffers walked */
	struct progress sink;
	/* Split (--split-size; NULL: one output): its part being written, and the processes whose
	   tracks that part describes. */
	struct split_out *split;
	struct cli_pids described;
};

/*
 * A writer of threads, one after the other, each into its part of the output; or, split, one
 * thread of all, every thread's writer with the same chunk (the input's output).
 */
struct pf {
	struct pf_input *input;
	struct cli_timeline_file file; /* the input being written: its copy, read on every event */
	int failed;		       /* out of memory or a compression error, reported */

	struct pb_buf pkt;    /* the packet being built */
	struct pf_chunk *out; /* the body's packets: own, or shared when split */
	struct pf_chunk own;  /* when not split */
	struct pb_buf head;   /* not split: the thread's head, its first packets, one chunk */
	int to_head;	      /* packets go to the head, not the body */

	/* The thread being written. */
	uint64_t part; /* its body's part of the output; its head's is the one before */
	uint32_t seq;
	uint64_t last_ns;
	struct pf_interned in;
	uint64_t reported; /* of its progress */
};

/*
 * The encoder's callbacks: pf_ops walks each thread once and puts its first packets in its
 * head (the calls begun before its first event among them, found at the end of the walk);
 * pf_ops_split, for timeline_walk_by_time(), writes everything into the shared chunk and
 * cuts the output where split_out_full() says.
 */
extern const struct timeline_ops pf_ops, pf_ops_split;

/* Lines on stderr from the workers come one at a time, between progress updates. */
void pf_lock(struct pf *s);
void pf_unlock(struct pf *s);
int pf_failed(void *ctx);

/* The process track of pid, and its parent if the sidecar names it. */
void pf_put_process(struct pf *s, uint32_t pid);

/*
 * The pid of a thread's track, as its events show it: never 0, which Perfetto takes for the
 * idle process its viewers hide.
 */
uint32_t pf_thread_pid(const struct cli_timeline_file *f, const struct xfdr_thread_info *ti);

/* The packets of c go out to part (split: to the part being written), and c is emptied. */
void pf_put_chunk(struct pf *s, struct pb_buf *c, uint64_t part);

/*
 * pf_deflate - the n bytes at in as one zlib stream (igzip, level PF_ZIP_LEVEL) into out (cap
 * bytes: at least igzip's bound), *len its bytes; zip's stream is zeroed first (igzip reads
 * fields its init leaves as they were). Returns igzip's COMP_OK, or its error.
 */
int pf_deflate(struct pf_zip *zip, const uint8_t *in, size_t n, uint8_t *out, size_t cap,
	       size_t *len);
/* The body's chunk goes out. */
void pf_flush(struct pf *s);

/* The chunk's memory and compressor, and those of s. */
void pf_chunk_free(struct pf_chunk *c);
void pf_free(struct pf *s);

#endif /* XFDR_COMMAND_PERFETTO_H */
