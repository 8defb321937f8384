/*
 * command/option_table.h - the verbs' command lines: each verb describes its options once, in a
 * table, and cli_options_parse() both parses argv by it and prints the verb's --help from it
 * (the idea of git's parse_options), so an option, its spelling, its checks and its line in
 * --help cannot drift apart, and no verb writes a getopt loop of its own.
 *
 * A table is an array of struct cli_option ended by CLI_OPT_END, written with the CLI_OPT_*
 * macros below. Options are parsed with getopt_long(3) (getopt_long_only(3) with
 * CLI_LONG_ONLY, as llvm-xray's single-dash spellings need); every message is one line on
 * stderr through cli_usage() (command/cli.h).
 */
#ifndef XFDR_COMMAND_OPTION_TABLE_H
#define XFDR_COMMAND_OPTION_TABLE_H

enum cli_option_kind {
	CLI_OPTION_END = 0,
	CLI_OPTION_STRING,  /* *(const char **)value = the argument */
	CLI_OPTION_FLAG,    /* *(int *)value = number */
	CLI_OPTION_WORD,    /* *(int *)value = the argument's index in words (NULL-ended); any
			       other argument: "'--LONG' takes W0, W1 or W2, not 'ARG'" */
	CLI_OPTION_CALL,    /* call(value, argument): returns 0, or a status it reported */
	CLI_OPTION_IGNORED, /* accepted for compatibility; does nothing */
	CLI_OPTION_HELP,    /* print the verb's --help; parsing stops */
	CLI_OPTION_LINE,    /* not an option: one more line of the --help listing */
};

enum cli_option_arg {
	CLI_ARG_NONE = 0,
	CLI_ARG_REQUIRED, /* listed as --long=ARG */
	CLI_ARG_OPTIONAL, /* listed as --long[=ARG]; the call gets NULL without one */
	CLI_ARG_SPACED,	  /* required, listed as --long ARG */
};

struct cli_option {
	enum cli_option_kind kind;
	int short_name;	       /* 'o', or 0 */
	const char *long_name; /* "output", or NULL */
	enum cli_option_arg arg;
	const char *arg_name; /* "OUT": in the listing */
	void *value;
	int number;		  /* FLAG: what is stored */
	const char *const *words; /* WORD: the accepted arguments, NULL-ended */
	int (*call)(void *value, const char *arg);
	const char *excludes; /* the long name of an option this one cannot be given with */
	const char *help;     /* the listing's text, lines split by '\n'; NULL: not listed */
	const char *listed;   /* the listing's left column when "  -s, --long=ARG" does not fit */
};

#define CLI_OPT_STRING(s, l, v, argname, h)                                                        \
	{                                                                                          \
		.kind = CLI_OPTION_STRING, .short_name = (s), .long_name = (l),                    \
		.arg = CLI_ARG_REQUIRED, .arg_name = (argname), .value = (v), .help = (h)          \
	}
#define CLI_OPT_FLAG(s, l, v, n, h)                                                                \
	{                                                                                          \
		.kind = CLI_OPTION_FLAG, .short_name = (s), .long_name = (l), .value = (v),        \
		.number = (n), .help = (h)                                                         \
	}
#define CLI_OPT_WORD(s, l, v, w, argname, h)                                                       \
	{                                                                                          \
		.kind = CLI_OPTION_WORD, .short_name = (s), .long_name = (l),                      \
		.arg = CLI_ARG_REQUIRED, .arg_name = (argname), .value = (v), .words = (w),        \
		.help = (h)                                                                        \
	}
#define CLI_OPT_CALL(s, l, v, fn, argname, h)                                                      \
	{                                                                                          \
		.kind = CLI_OPTION_CALL, .short_name = (s), .long_name = (l),                      \
		.arg = CLI_ARG_REQUIRED, .arg_name = (argname), .value = (v), .call = (fn),        \
		.help = (h)                                                                        \
	}
#define CLI_OPT_HELP                                                                               \
	{                                                                                          \
		.kind = CLI_OPTION_HELP, .short_name = 'h', .long_name = "help",                   \
		.help = "show this help"                                                           \
	}
#define CLI_OPT_LINE(left, h)                                                                      \
	{                                                                                          \
		.kind = CLI_OPTION_LINE, .listed = (left), .help = (h)                             \
	}
#define CLI_OPT_END                                                                                \
	{                                                                                          \
		.kind = CLI_OPTION_END                                                             \
	}

/*
 * --map=MAP and --no-map, which every reading verb has: value is a struct cli_map_choice,
 * the texts are the verb's lines in --help. Given both: "--map and --no-map exclude each
 * other".
 */
struct cli_map_choice {
	const char *map; /* --map, or NULL */
	int no_map;	 /* --no-map */
};
#define CLI_OPT_MAP(choice, map_help, no_map_help)                                                 \
	{.kind = CLI_OPTION_STRING,                                                                \
	 .long_name = "map",                                                                       \
	 .arg = CLI_ARG_REQUIRED,                                                                  \
	 .arg_name = "MAP",                                                                        \
	 .value = &(choice)->map,                                                                  \
	 .excludes = "no-map",                                                                     \
	 .help = (map_help)},                                                                      \
	    CLI_OPT_FLAG(0, "no-map", &(choice)->no_map, 1, (no_map_help))

/* --map and --no-map with the plain lines of the analyses that name functions only. */
#define CLI_OPT_MAP_PLAIN(choice)                                                                  \
	CLI_OPT_MAP((choice), "name functions from MAP (default: FILE.map if it exists)",          \
		    "name functions '#ID'")

/*
 * --since, --until, --thread and --window, which the reading verbs have: o is a struct
 * cli_window_opts (command/cli.h); window_help is the verb's line for --window, whose default
 * it sets itself.
 */
#define CLI_OPT_WINDOW(o, window_help)                                                             \
	CLI_OPT_CALL(0, "since", (o), cli_window_parse_since, "WHEN",                              \
		     "from WHEN on: a TSC, a time from the trace's start with a\n"                 \
		     "unit (250us, 1.5ms, 2s) or 'snapshot' (the since_tsc of\n"                   \
		     "FILE's .map); a call open there is cut at it"),                              \
	    CLI_OPT_CALL(0, "until", (o), cli_window_parse_until, "WHEN",                          \
			 "up to WHEN (a TSC or a time, as --since); a call open\n"                 \
			 "there is cut at it"),                                                    \
	    CLI_OPT_STRING(0, "thread", &(o)->thread, "LIST",                                      \
			   "only these threads, comma-separated: their ids in the\n"               \
			   "trace (as `xfdr dump` shows them) or the kernel's tids\n"              \
			   "(as ps -L and top -H show them)"),                                     \
	    CLI_OPT_WORD(0, "window", &(o)->whole, cli_window_words, "common|all", (window_help))

extern const char *const cli_window_words[];

/* The --window line of a verb that reads the common window by default (an analysis). */
#define CLI_WINDOW_COMMON_HELP                                                                     \
	"with neither --since nor --until: 'common' (the default)\n"                               \
	"reads only the time every thread's kept history covers;\n"                                \
	"'all' reads all of it"

/*
 * The options the verbs that print a table share: -r/--sortorder=asc|dsc (*v: 1 for dsc; help
 * names the default), -f/--format=text|csv (*v: 1 for csv).
 */
extern const char *const cli_sortorder_words[];
extern const char *const cli_table_format_words[];
#define CLI_OPT_SORTORDER(v, help)                                                                 \
	CLI_OPT_WORD('r', "sortorder", (v), cli_sortorder_words, "ORDER", (help))
#define CLI_OPT_TABLE_FORMAT(v)                                                                    \
	CLI_OPT_WORD('f', "format", (v), cli_table_format_words, "FMT", "text (default) or csv")

/*
 * cli_parse_number - an option's argument as a number from lo to hi (strtod's forms, nothing
 * after it) into *out. Returns 0, or -1 (*out untouched): the caller says what it takes.
 */
int cli_parse_number(const char *arg, double lo, double hi, double *out);

/* -p/--top=N of the verbs that print a table: value is a long, N <= 0 all rows. */
int cli_parse_top(void *top, const char *arg);
#define CLI_OPT_TOP(v)                                                                             \
	CLI_OPT_CALL('p', "top", (v), cli_parse_top, "N",                                          \
		     "print only the first N rows (N <= 0: all, the default)")

enum cli_command_flags {
	CLI_LONG_ONLY = 1 << 0,	      /* -long works as --long (and -s=V as -s V) */
	CLI_STOP_AT_OPERAND = 1 << 1, /* options end at the first operand (a program's own) */
};

enum cli_operands {
	CLI_ONE_OPERAND = 0, /* exactly one: "missing WHAT", "one WHAT at a time; ..." */
	CLI_SOME_OPERANDS,   /* one or more: "missing WHAT" */
};

struct cli_command {
	const char *head; /* --help before the options: the usage lines and what the verb does */
	const char *tail; /* --help after the options, or NULL */
	int column;	  /* where the options' texts begin in the listing */
	unsigned flags;	  /* enum cli_command_flags */
	enum cli_operands operands;
	const char *operand; /* the operand's name in messages: "FILE", "CORE", "PROGRAM" */
	const struct cli_option *options;
};

/*
 * cli_options_parse - parse argv[1..] (argv[0] is the verb) by cmd's table, storing into
 * the options' values, which the caller set to their defaults before. Returns 0 with
 * *operands = the first operand (argv's NULL ends them); -1 after printing --help; or a
 * status after reporting the first thing wrong, in this order: an option (unknown, missing or
 * bad argument), the operands, two options that exclude each other.
 */
int cli_options_parse(const struct cli_command *cmd, int argc, char **argv, char ***operands);

/* The same for a verb of one operand (CLI_ONE_OPERAND): it goes into *operand. */
int cli_options_parse_one(const struct cli_command *cmd, int argc, char **argv,
			  const char **operand);

/* cli_options_help - print cmd's --help on stdout. */
void cli_options_help(const struct cli_command *cmd);

#endif /* XFDR_COMMAND_OPTION_TABLE_H */
