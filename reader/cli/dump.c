/*
 * reader/cli/dump.c - `xfdr dump FILE`: the header and every record, one per line, in file order.
 *
 * Meant for looking at a file, valid or not: records are printed as the reader's cursor
 * decodes them, and at the first violation the error line goes to stderr and the exit status
 * is 1, after everything before it has been printed. Line format (stable, for grep/awk):
 *
 *   OFFSET BUFFER RECORD FIELDS...   e.g.
 *   80     0      Entry             function=1 delta=10 tsc=1010 cpu=1
 *
 * FIELDS are key=value: function records show the TSC the reader reconstructed; a custom event
 * shows its size, TSC and a preview of its first bytes in hex and as text.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "reader/cli/cli.h"

#define DUMP_PREVIEW_BYTES 16

static void dump_help(void)
{
	fputs("usage: xfdr dump FILE\n"
	      "\n"
	      "Print the header of FILE, then every record with its byte offset, buffer number,\n"
	      "kind and decoded fields (function records with the absolute TSC the reader\n"
	      "reconstructs, call arguments, custom events with their size and a preview).\n"
	      "An invalid file is printed up to the first error, which goes to stderr.\n"
	      "\n"
	      "  -h, --help  show this help\n"
	      "\n"
	      "Exit status: 0 valid, 1 invalid file or write error, 2 usage error or unreadable\n"
	      "FILE.\n",
	      stdout);
}

static void dump_header(struct cli_out *o, const struct xfdr_trace *t)
{
	const struct xfdr_header *h = xfdr_trace_header(t);

	cli_printf(o, "file: %s\n", xfdr_trace_name(t));
	cli_printf(o,
		   "header: version=%u type=%u bitfield=0x%08" PRIx32
		   " constant_tsc=%d nonstop_tsc=%d cycle_frequency=%" PRIu64
		   " buffer_size=%" PRIu64 " byte_order=%s buffers=%" PRIu64 "\n",
		   h->version, h->type, h->bitfield, h->constant_tsc, h->nonstop_tsc,
		   h->cycle_frequency, h->buffer_size, h->big_endian ? "big" : "little",
		   xfdr_trace_buffer_count(t));
	cli_puts(o, "offset     buffer record            fields\n");
}

static void dump_payload(struct cli_out *o, const uint8_t *p, uint32_t n)
{
	static const char hex[] = "0123456789abcdef";
	uint32_t k = n < DUMP_PREVIEW_BYTES ? n : DUMP_PREVIEW_BYTES, i;

	cli_puts(o, " data=");
	for (i = 0; i < k; i++) {
		cli_putc(o, hex[p[i] >> 4]);
		cli_putc(o, hex[p[i] & 15]);
	}
	if (k < n)
		cli_puts(o, "...");
	cli_puts(o, " text=\"");
	for (i = 0; i < k; i++)
		cli_putc(o, p[i] >= 0x20 && p[i] < 0x7f && p[i] != '"' ? (char)p[i] : '.');
	cli_putc(o, '"');
	if (k < n)
		cli_puts(o, "...");
}

static void dump_record(struct cli_out *o, const struct xfdr_record *r)
{
	const char *name =
	    r->is_metadata ? xfdr_md_kind_name(r->kind) : xfdr_fn_action_name(r->kind);

	cli_printf(o, "%-10" PRIu64 " %-6" PRIu64 " %-17s", r->offset, r->buffer_index, name);
	if (!r->is_metadata) {
		cli_printf(o, " function=%" PRIu32 " delta=%" PRIu32 " tsc=%" PRIu64 " cpu=%u",
			   r->function_id, r->tsc_delta, r->tsc, r->cpu);
	} else {
		switch (r->kind) {
		case XFDR_MD_NEW_BUFFER:
			cli_printf(o, " thread=%u", r->thread_id);
			break;
		case XFDR_MD_END_OF_BUFFER:
			cli_printf(o, " padding=%" PRIu64, r->skipped_bytes);
			break;
		case XFDR_MD_NEW_CPU_ID:
			cli_printf(o, " cpu=%u tsc=%" PRIu64, r->cpu, r->absolute_tsc);
			break;
		case XFDR_MD_TSC_WRAP:
			cli_printf(o, " tsc=%" PRIu64, r->absolute_tsc);
			break;
		case XFDR_MD_WALL_CLOCK_TIME:
			cli_printf(o, " seconds=%" PRIu64 " micros=%" PRIu32, r->seconds,
				   r->micros);
			break;
		case XFDR_MD_CUSTOM_EVENT:
			cli_printf(o, " size=%" PRIu32 " tsc=%" PRIu64, r->payload_bytes,
				   r->absolute_tsc);
			dump_payload(o, r->payload, r->payload_bytes);
			break;
		case XFDR_MD_CALL_ARGUMENT:
			cli_printf(o, " arg=%" PRIu64 " hex=0x%" PRIx64, r->arg, r->arg);
			break;
		default:
			break;
		}
	}
	cli_putc(o, '\n');
}

int cmd_dump(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	static struct cli_out out;
	struct xfdr_record_cursor cur;
	struct xfdr_trace *t;
	struct xfdr_record r;
	struct xfdr_error err;
	int c, rc, status;

	opterr = 0;
	optind = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		if (c == 'h') {
			dump_help();
			return CLI_OK;
		}
		return cli_bad_option(argv, c, optopt);
	}
	if (optind == argc)
		return cli_usage("missing FILE");
	if (argc - optind > 1)
		return cli_usage("one FILE at a time; extra operand '%s'", argv[optind + 1]);
	status = cli_check_input(argv[optind]);
	if (status)
		return status;
	if (xfdr_trace_open(argv[optind], &t, &err) < 0) {
		fprintf(stderr, "%s\n", err.text);
		return CLI_FAIL;
	}
	cli_out_open(&out, NULL);
	dump_header(&out, t);
	xfdr_records_begin(t, &cur);
	while ((rc = xfdr_records_next(&cur, &r, &err)) == 1 && !out.err)
		dump_record(&out, &r);
	status = cli_out_close(&out);
	if (rc < 0) {
		fprintf(stderr, "%s\n", err.text);
		status = CLI_FAIL;
	}
	xfdr_trace_close(t);
	return status;
}
