/*
 * tests/support/speedscope.h - open a file in speedscope (a widely used profile viewer, from
 * npm: tests/npm, installed by `make deps`), running its own importer in headless Chromium, and
 * read what it said.
 *
 * speedscope's command line does the same for a person: it writes the file, base64-encoded, into
 * a script that calls speedscope.loadFileFromBase64(), and opens the viewer's index.html with
 * #localProfilePath= naming that script (file: URLs; its profileURL= needs http). The importer
 * logs to the console (which format it took, each event it could not place); Chromium prints
 * console messages on stderr with --enable-logging=stderr, and the page after the import with
 * --dump-dom (the profile's name is in the toolbar).
 */
#ifndef XFDR_TESTS_SUPPORT_SPEEDSCOPE_H
#define XFDR_TESTS_SUPPORT_SPEEDSCOPE_H

#include <stddef.h>

struct speedscope_view {
	char *console; /* the console messages, one a line, in order */
	char *page;    /* the page's HTML after the import */
};

/*
 * speedscope_open - import file (a path) into speedscope; fill v (free it with
 * speedscope_view_free()). Fails the test when speedscope or Chromium is missing or Chromium
 * fails.
 */
void speedscope_open(const char *file, struct speedscope_view *v);
void speedscope_view_free(struct speedscope_view *v);

/* The console lines of v that contain what (a fragment), counted. */
size_t speedscope_count(const struct speedscope_view *v, const char *what);

#endif /* XFDR_TESTS_SUPPORT_SPEEDSCOPE_H */
