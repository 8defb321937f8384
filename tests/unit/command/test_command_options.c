/*
 * The verbs' option tables (command/option_table.h): what cli_options_parse() stores and says for
 * each kind of option, and the --help listing it prints from the same table. The expected
 * texts are written out here by hand; the whole-command behaviour of each verb's table is
 * tested by the verb's own tests through the xfdr binary.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "command/cli.h"
#include "command/option_table.h"
#include "tests/support/text.h"

/* ---- Capturing what a call prints -------------------------------------------------------- */

struct capture {
	FILE *file;
	int saved_fd;
	int fd; /* 1 or 2 */
};

static void capture_begin(struct capture *c, int fd)
{
	fflush(fd == 1 ? stdout : stderr);
	c->fd = fd;
	c->file = tmpfile();
	assert_non_null(c->file);
	c->saved_fd = dup(fd);
	assert_true(c->saved_fd >= 0);
	assert_int_equal(dup2(fileno(c->file), fd), fd);
}

/* Restores the descriptor; returns what was printed (free it). */
static char *capture_end(struct capture *c)
{
	long n;
	char *text;

	fflush(c->fd == 1 ? stdout : stderr);
	assert_int_equal(dup2(c->saved_fd, c->fd), c->fd);
	close(c->saved_fd);
	n = ftell(c->file);
	assert_true(n >= 0);
	text = calloc(1, (size_t)n + 1);
	assert_non_null(text);
	rewind(c->file);
	assert_int_equal(fread(text, 1, (size_t)n, c->file), (size_t)n);
	fclose(c->file);
	return text;
}

/* ---- A table with every kind of option ---------------------------------------------------- */

static const char *const colour_names[] = {"red", "green", "blue", NULL};

struct opts {
	const char *output;
	int verbose, colour, level, level_given_null;
	struct cli_map_choice names;
};

static int parse_level(void *value, const char *arg)
{
	struct opts *o = value;

	if (!arg) {
		o->level_given_null = 1;
		return 0;
	}
	if (strcmp(arg, "1") && strcmp(arg, "2"))
		return cli_usage("'--level' takes 1 or 2, not '%s'", arg);
	o->level = arg[0] - '0';
	return 0;
}

static struct opts o;
static const struct cli_option table[] = {
    CLI_OPT_STRING('o', "output", &o.output, "OUT", "write OUT"),
    CLI_OPT_FLAG('v', "verbose", &o.verbose, 1, "say more,\nmuch more"),
    CLI_OPT_WORD('c', "colour", &o.colour, colour_names, "C", "a colour"),
    {.kind = CLI_OPTION_CALL,
     .long_name = "level",
     .arg = CLI_ARG_OPTIONAL,
     .arg_name = "N",
     .value = &o,
     .call = parse_level,
     .help = "how much"},
    {.kind = CLI_OPTION_CALL,
     .long_name = "a-very-long-option",
     .arg = CLI_ARG_SPACED,
     .arg_name = "KEY=VALUE",
     .value = &o,
     .call = parse_level,
     .help = "next line"},
    CLI_OPT_STRING(0, "name", &o.output, "NAME", "one space"),
    CLI_OPT_LINE("      --colour=red", "only a line"),
    {.kind = CLI_OPTION_IGNORED, .short_name = 'k', .long_name = "keep-going"},
    CLI_OPT_MAP(&o.names, "name from MAP", "no names"),
    CLI_OPT_HELP,
    CLI_OPT_END,
};

static struct cli_command command = {
    .head = "usage: t [OPTIONS] FILE\n\nDoes things.\n",
    .tail = "Exit status: 0.\n",
    .column = 16,
    .operand = "FILE",
    .options = table,
};

static int setup(void **state)
{
	(void)state;
	memset(&o, 0, sizeof(o));
	command.flags = 0;
	command.operands = CLI_ONE_OPERAND;
	cli_set_verb("xfdr t");
	return 0;
}

/* Parse the NULL-ended words (the verb's name first); what stderr got into *err (free it). */
static int parse(char **err, char ***operands, ...)
{
	static char *argv[32];
	struct capture c;
	va_list ap;
	int argc = 0, rc;

	va_start(ap, operands);
	while ((argv[argc] = va_arg(ap, char *)))
		argc++;
	va_end(ap);
	capture_begin(&c, 2);
	rc = cli_options_parse(&command, argc, argv, operands);
	*err = capture_end(&c);
	return rc;
}

static void test_help_lists_the_table(void **state)
{
	struct capture c;
	char *out;

	(void)state;
	capture_begin(&c, 1);
	cli_options_help(&command);
	out = capture_end(&c);
	text_assert_equal(out, "usage: t [OPTIONS] FILE\n"
			       "\n"
			       "Does things.\n"
			       "\n"
			       "  -o, --output=OUT\n"
			       "                write OUT\n"
			       "  -v, --verbose say more,\n"
			       "                much more\n"
			       "  -c, --colour=C\n"
			       "                a colour\n"
			       "      --level[=N]\n"
			       "                how much\n"
			       "      --a-very-long-option KEY=VALUE\n"
			       "                next line\n"
			       "      --name=NAME\n"
			       "                one space\n"
			       "      --colour=red\n"
			       "                only a line\n"
			       "      --map=MAP name from MAP\n"
			       "      --no-map  no names\n"
			       "  -h, --help    show this help\n"
			       "\n"
			       "Exit status: 0.\n");
	free(out);
}

static void test_values_are_stored(void **state)
{
	char *err, **operands;

	(void)state;
	assert_int_equal(parse(&err, &operands, "t", "-o", "x", "--verbose", "--colour=blue",
			       "--level=2", "-k", "--map", "m", "FILE", NULL),
			 0);
	assert_string_equal(err, "");
	assert_string_equal(o.output, "x");
	assert_int_equal(o.verbose, 1);
	assert_int_equal(o.colour, 2);
	assert_int_equal(o.level, 2);
	assert_string_equal(o.names.map, "m");
	assert_int_equal(o.names.no_map, 0);
	assert_string_equal(operands[0], "FILE");
	assert_null(operands[1]);
	free(err);
	/* An optional argument left out calls with NULL. */
	assert_int_equal(parse(&err, &operands, "t", "--level", "FILE", NULL), 0);
	assert_int_equal(o.level_given_null, 1);
	free(err);
}

static void test_bad_word_lists_the_words(void **state)
{
	char *err, **operands;

	(void)state;
	assert_int_equal(parse(&err, &operands, "t", "-c", "pink", "FILE", NULL), CLI_USAGE);
	assert_string_equal(err, "xfdr t: '--colour' takes red, green or blue, not 'pink' "
				 "(try 'xfdr t --help')\n");
	free(err);
}

static void test_call_status_is_returned(void **state)
{
	char *err, **operands;

	(void)state;
	assert_int_equal(parse(&err, &operands, "t", "--level=3", "FILE", NULL), CLI_USAGE);
	assert_string_equal(err, "xfdr t: '--level' takes 1 or 2, not '3' (try 'xfdr t --help')\n");
	free(err);
}

static void test_getopt_errors(void **state)
{
	char *err, **operands;

	(void)state;
	assert_int_equal(parse(&err, &operands, "t", "-z", "FILE", NULL), CLI_USAGE);
	assert_string_equal(err, "xfdr t: unknown option '-z' (try 'xfdr t --help')\n");
	free(err);
	assert_int_equal(parse(&err, &operands, "t", "--nope", "FILE", NULL), CLI_USAGE);
	assert_string_equal(err,
			    "xfdr t: unknown or ambiguous option '--nope' (try 'xfdr t --help')\n");
	free(err);
	assert_int_equal(parse(&err, &operands, "t", "FILE", "-o", NULL), CLI_USAGE);
	assert_string_equal(err, "xfdr t: option '-o' needs an argument (try 'xfdr t --help')\n");
	free(err);
}

static void test_operands_are_counted(void **state)
{
	char *err, **operands;

	(void)state;
	assert_int_equal(parse(&err, &operands, "t", "-v", NULL), CLI_USAGE);
	assert_string_equal(err, "xfdr t: missing FILE (try 'xfdr t --help')\n");
	free(err);
	assert_int_equal(parse(&err, &operands, "t", "a", "b", NULL), CLI_USAGE);
	assert_string_equal(
	    err, "xfdr t: one FILE at a time; extra operand 'b' (try 'xfdr t --help')\n");
	free(err);
	command.operands = CLI_SOME_OPERANDS;
	assert_int_equal(parse(&err, &operands, "t", "a", "-v", "b", NULL), 0);
	assert_string_equal(operands[0], "a");
	assert_string_equal(operands[1], "b");
	assert_null(operands[2]);
	assert_int_equal(o.verbose, 1);
	free(err);
}

static void test_excluded_options(void **state)
{
	char *err, **operands;

	(void)state;
	assert_int_equal(parse(&err, &operands, "t", "--no-map", "--map=m", "FILE", NULL),
			 CLI_USAGE);
	assert_string_equal(
	    err, "xfdr t: --map and --no-map exclude each other (try 'xfdr t --help')\n");
	free(err);
	/* The operands are checked first. */
	assert_int_equal(parse(&err, &operands, "t", "--no-map", "--map=m", NULL), CLI_USAGE);
	assert_string_equal(err, "xfdr t: missing FILE (try 'xfdr t --help')\n");
	free(err);
}

static void test_help_stops_parsing(void **state)
{
	struct capture c;
	char *err, *out, **operands;
	int rc;

	(void)state;
	capture_begin(&c, 1);
	rc = parse(&err, &operands, "t", "-h", "--nope", NULL);
	out = capture_end(&c);
	assert_int_equal(rc, -1);
	assert_string_equal(err, "");
	text_assert_contains(out, "usage: t [OPTIONS] FILE\n");
	free(out);
	free(err);
}

static void test_long_only_takes_one_dash(void **state)
{
	char *err, **operands;

	(void)state;
	/* Without CLI_LONG_ONLY, -c=blue is -c with the argument "=blue". */
	assert_int_equal(parse(&err, &operands, "t", "-c=blue", "FILE", NULL), CLI_USAGE);
	free(err);
	command.flags = CLI_LONG_ONLY;
	assert_int_equal(
	    parse(&err, &operands, "t", "-c=blue", "-output=x", "-verbose", "FILE", NULL), 0);
	assert_string_equal(err, "");
	assert_int_equal(o.colour, 2);
	assert_string_equal(o.output, "x");
	assert_int_equal(o.verbose, 1);
	free(err);
}

static void test_stop_at_operand(void **state)
{
	char *err, **operands;

	(void)state;
	command.flags = CLI_STOP_AT_OPERAND;
	command.operands = CLI_SOME_OPERANDS;
	assert_int_equal(parse(&err, &operands, "t", "-v", "prog", "-o", "x", NULL), 0);
	assert_int_equal(o.verbose, 1);
	assert_null(o.output);
	assert_string_equal(operands[0], "prog");
	assert_string_equal(operands[1], "-o");
	free(err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_help_lists_the_table, setup),
	    cmocka_unit_test_setup(test_values_are_stored, setup),
	    cmocka_unit_test_setup(test_bad_word_lists_the_words, setup),
	    cmocka_unit_test_setup(test_call_status_is_returned, setup),
	    cmocka_unit_test_setup(test_getopt_errors, setup),
	    cmocka_unit_test_setup(test_operands_are_counted, setup),
	    cmocka_unit_test_setup(test_excluded_options, setup),
	    cmocka_unit_test_setup(test_help_stops_parsing, setup),
	    cmocka_unit_test_setup(test_long_only_takes_one_dash, setup),
	    cmocka_unit_test_setup(test_stop_at_operand, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
