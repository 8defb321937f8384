/*
 * launcher/options_text.h - the XFDR_OPTIONS text as the runtime reads it
 * (runtime/control/options.c): KEY=VALUE items split at ':' and white space (but for a
 * character after a backslash, and a double colon), applied left to right, so the last item of
 * a key wins. `xfdr record` composes it and then asks it what the
 * program will run with.
 */
#ifndef XFDR_LAUNCHER_OPTIONS_TEXT_H
#define XFDR_LAUNCHER_OPTIONS_TEXT_H

#include <stddef.h>

#include "xfdr/reader.h"

/* The runtime ignores an XFDR_OPTIONS this long or longer (env_store in lifecycle.c). */
#define LAUNCH_OPTIONS_MAX 4096

/* Does s hold a character that splits XFDR_OPTIONS items (':' or white space)? */
int launch_options_split(const char *s);

/*
 * launch_options_escape - value as one item's value: a backslash before each character that
 * would split it (the runtime keeps what follows a backslash in the item, and the patterns of
 * include= and exclude= read "\:" as ':'). Into out (n bytes). Returns its length, or -1 when
 * it does not fit.
 */
int launch_options_escape(const char *value, char *out, size_t n);

/*
 * launch_option_value - the value the runtime will use for key in text (the last one), into
 * out (n bytes). Returns 1, or 0 when key is not there (or its value does not fit).
 */
int launch_option_value(const char *text, const char *key, char *out, size_t n);

/* Whether key is set to a false value (0, no, false, off) in text. */
int launch_option_false(const char *text, const char *key);

/*
 * launch_options_check - text checked by the runtime lib (a path to libxfdr.so.0) itself, as
 * the program would read it (xfdr_options_check(), xfdr/xfdr.h): the runtime prints a line on
 * stderr for each problem. lib is loaded into this process with XFDR_OPTIONS out of its
 * environment meanwhile, so that it starts nothing here. Returns how many problems there
 * were, or -1 with err filled when lib cannot be loaded or has no such check.
 */
int launch_options_check(const char *lib, const char *text, struct xfdr_error *err);

#endif /* XFDR_LAUNCHER_OPTIONS_TEXT_H */
