/*
 * command/option_table.c - parse a verb's command line by its option table, and list the table in
 * its --help (command/option_table.h).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "command/cli.h"
#include "command/option_table.h"

/* More than any verb has: a table this long is a mistake found by the first test. */
#define OPTIONS_MAX 40
/* getopt_long() returns this plus the table index for an option known by its long name. */
#define LONG_BASE 256

/*
 * getopt_long() runs with a leading ':' in the short options and opterr = 0: it returns ':'
 * for a missing argument and '?' for an unknown option. A missing argument is always the end
 * of argv[optind - 1]; an unknown short option sits in optopt (possibly inside a cluster that
 * optind has not left yet), an unknown long one has optopt 0 and is argv[optind - 1].
 */
static int bad_option(char **argv, int ret, int opt)
{
	const char *arg = argv[optind - 1];

	if (ret == ':')
		return cli_usage("option '%s' needs an argument", arg);
	if (opt > 0 && opt < 128)
		return cli_usage("unknown option '-%c'", opt);
	return cli_usage("unknown or ambiguous option '%s'", arg);
}

static int has_arg(const struct cli_option *o)
{
	if (o->arg == CLI_ARG_OPTIONAL)
		return optional_argument;
	return o->arg == CLI_ARG_NONE ? no_argument : required_argument;
}

/*
 * The getopt_long() tables of cmd: short option letters (with ':' for an argument, '::' for
 * an optional one) and long options whose val is LONG_BASE + index. With CLI_LONG_ONLY each
 * letter that takes an argument is a long name too, so that -s=V reads as llvm-xray reads it
 * rather than as "-s" with the argument "=V". Returns 0, or -1 when the table is too long.
 */
static int getopt_tables(const struct cli_command *cmd, char *shorts, struct option *longs,
			 char (*letters)[2])
{
	const struct cli_option *o;
	size_t ns = 0, nl = 0;

	if (cmd->flags & CLI_STOP_AT_OPERAND)
		shorts[ns++] = '+';
	shorts[ns++] = ':';
	for (o = cmd->options; o->kind != CLI_OPTION_END; o++) {
		int index = (int)(o - cmd->options);

		if (index >= OPTIONS_MAX)
			return -1;
		if (o->kind == CLI_OPTION_LINE)
			continue;
		if (o->long_name)
			longs[nl++] =
			    (struct option){o->long_name, has_arg(o), NULL, LONG_BASE + index};
		if (!o->short_name)
			continue;
		shorts[ns++] = (char)o->short_name;
		if (o->arg != CLI_ARG_NONE)
			shorts[ns++] = ':';
		if (o->arg == CLI_ARG_OPTIONAL)
			shorts[ns++] = ':';
		if ((cmd->flags & CLI_LONG_ONLY) && o->arg != CLI_ARG_NONE) {
			letters[index][0] = (char)o->short_name;
			letters[index][1] = '\0';
			longs[nl++] =
			    (struct option){letters[index], has_arg(o), NULL, LONG_BASE + index};
		}
	}
	shorts[ns] = '\0';
	longs[nl] = (struct option){NULL, 0, NULL, 0};
	return 0;
}

/* The table index of what getopt_long() returned, or -1 for an error it returned. */
static int option_index(const struct cli_command *cmd, int c)
{
	const struct cli_option *o;

	if (c >= LONG_BASE)
		return c - LONG_BASE;
	for (o = cmd->options; o->kind != CLI_OPTION_END; o++)
		if (o->short_name == c && o->kind != CLI_OPTION_LINE)
			return (int)(o - cmd->options);
	return -1;
}

/* The name an option is called by in messages: "--long", else "-s". */
static const char *called(const struct cli_option *o, char *buf, size_t n)
{
	if (o->long_name)
		snprintf(buf, n, "--%s", o->long_name);
	else
		snprintf(buf, n, "-%c", o->short_name);
	return buf;
}

/* "'--sort' takes funcid, count or sum, not 'ARG'" */
static int bad_word(const struct cli_option *o, const char *arg)
{
	char list[512], name[64];
	size_t i, len = 0;

	list[0] = '\0';
	for (i = 0; o->words[i]; i++) {
		const char *sep = i == 0 ? "" : o->words[i + 1] ? ", " : " or ";

		len += (size_t)snprintf(list + len, len < sizeof(list) ? sizeof(list) - len : 0,
					"%s%s", sep, o->words[i]);
	}
	return cli_usage("'%s' takes %s, not '%s'", called(o, name, sizeof(name)), list, arg);
}

/* Do what option o says with arg. Returns 0, -1 after --help, or a status reported. */
static int apply(const struct cli_command *cmd, const struct cli_option *o, const char *arg)
{
	size_t i;

	switch (o->kind) {
	case CLI_OPTION_STRING:
		*(const char **)o->value = arg;
		return 0;
	case CLI_OPTION_FLAG:
		*(int *)o->value = o->number;
		return 0;
	case CLI_OPTION_WORD:
		for (i = 0; o->words[i]; i++) {
			if (!strcmp(arg, o->words[i])) {
				*(int *)o->value = (int)i;
				return 0;
			}
		}
		return bad_word(o, arg);
	case CLI_OPTION_CALL:
		return o->call(o->value, arg);
	case CLI_OPTION_HELP:
		cli_options_help(cmd);
		return -1;
	default:
		return 0;
	}
}

static int check_operands(const struct cli_command *cmd, int argc, char **argv)
{
	if (optind == argc)
		return cli_usage("missing %s", cmd->operand);
	if (cmd->operands == CLI_ONE_OPERAND && argc - optind > 1)
		return cli_usage("one %s at a time; extra operand '%s'", cmd->operand,
				 argv[optind + 1]);
	return 0;
}

/* Two options given that exclude each other? seen[i]: option i was given. */
static int check_exclusions(const struct cli_command *cmd, const unsigned char *seen)
{
	const struct cli_option *o, *x;

	for (o = cmd->options; o->kind != CLI_OPTION_END; o++) {
		if (!o->excludes || !seen[o - cmd->options])
			continue;
		for (x = cmd->options; x->kind != CLI_OPTION_END; x++)
			if (x->long_name && !strcmp(x->long_name, o->excludes) &&
			    seen[x - cmd->options])
				return cli_usage("--%s and --%s exclude each other", o->long_name,
						 x->long_name);
	}
	return 0;
}

int cli_options_parse(const struct cli_command *cmd, int argc, char **argv, char ***operands)
{
	struct option longs[2 * OPTIONS_MAX + 1];
	char shorts[3 * OPTIONS_MAX + 3];
	char letters[OPTIONS_MAX][2]; /* the long names of CLI_LONG_ONLY's letters */
	unsigned char seen[OPTIONS_MAX] = {0};
	int c, i, rc;

	if (getopt_tables(cmd, shorts, longs, letters)) {
		cli_error("internal error: more than %d options", OPTIONS_MAX);
		return CLI_USAGE;
	}
	opterr = 0;
	optind = 0; /* GNU: start a fresh scan */
	for (;;) {
		if (cmd->flags & CLI_LONG_ONLY)
			c = getopt_long_only(argc, argv, shorts, longs, NULL);
		else
			c = getopt_long(argc, argv, shorts, longs, NULL);
		if (c == -1)
			break;
		i = option_index(cmd, c);
		if (i < 0)
			return bad_option(argv, c, optopt);
		seen[i] = 1;
		rc = apply(cmd, &cmd->options[i], optarg);
		if (rc)
			return rc;
	}
	rc = check_operands(cmd, argc, argv);
	if (rc)
		return rc;
	rc = check_exclusions(cmd, seen);
	if (rc)
		return rc;
	*operands = argv + optind;
	return 0;
}

int cli_options_parse_one(const struct cli_command *cmd, int argc, char **argv,
			  const char **operand)
{
	char **operands;
	int rc = cli_options_parse(cmd, argc, argv, &operands);

	if (rc == 0)
		*operand = operands[0];
	return rc;
}

/* ---- --help ---------------------------------------------------------------------------- */

/* The listing's left column of o: "  -s, --long=ARG", "      --long", "  -s". */
static void left_column(const struct cli_option *o, char *buf, size_t n)
{
	static const char *const arg_form[] = {
	    [CLI_ARG_NONE] = "",
	    [CLI_ARG_REQUIRED] = "=",
	    [CLI_ARG_OPTIONAL] = "[=",
	    [CLI_ARG_SPACED] = " ",
	};
	size_t len;

	if (o->listed) {
		snprintf(buf, n, "%s", o->listed);
		return;
	}
	if (o->short_name)
		len = (size_t)snprintf(buf, n, "  -%c%s", o->short_name, o->long_name ? ", " : "");
	else
		len = (size_t)snprintf(buf, n, "      ");
	if (o->long_name && len < n)
		len += (size_t)snprintf(buf + len, n - len, "--%s", o->long_name);
	if (o->arg != CLI_ARG_NONE && len < n)
		snprintf(buf + len, n - len, "%s%s%s", arg_form[o->arg], o->arg_name,
			 o->arg == CLI_ARG_OPTIONAL ? "]" : "");
}

/*
 * One entry: the left column, then the text from cmd->column on (on the next line when the
 * left column reaches it), each further line of the text indented to the column.
 */
static void list_option(const struct cli_command *cmd, const struct cli_option *o)
{
	const char *p = o->help, *nl;
	char left[128];
	int width;

	left_column(o, left, sizeof(left));
	width = (int)strlen(left);
	fputs(left, stdout);
	if (width >= cmd->column) {
		putchar('\n');
		width = 0;
	}
	printf("%*s", cmd->column - width, "");
	while ((nl = strchr(p, '\n'))) {
		printf("%.*s\n%*s", (int)(nl - p), p, cmd->column, "");
		p = nl + 1;
	}
	printf("%s\n", p);
}

void cli_options_help(const struct cli_command *cmd)
{
	const struct cli_option *o;

	fputs(cmd->head, stdout);
	putchar('\n');
	for (o = cmd->options; o->kind != CLI_OPTION_END; o++)
		if (o->help)
			list_option(cmd, o);
	if (cmd->tail) {
		putchar('\n');
		fputs(cmd->tail, stdout);
	}
}

const char *const cli_sortorder_words[] = {"asc", "dsc", NULL};
const char *const cli_table_format_words[] = {"text", "csv", NULL};

int cli_parse_number(const char *arg, double lo, double hi, double *out)
{
	char *end;
	double v = strtod(arg, &end);

	if (end == arg || *end || !(v >= lo && v <= hi))
		return -1;
	*out = v;
	return 0;
}

int cli_parse_top(void *top, const char *arg)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (!*arg || *end || errno || v < INT_MIN || v > INT_MAX)
		return cli_usage("'--top' takes a whole number, not '%s'", arg);
	*(long *)top = v;
	return 0;
}
