/*
 * runtime/symbols/patterns.h - a list of shell patterns as the include= and exclude= options
 * give it (fnfilter.h): patterns separated by commas, "\\," a comma inside one; every
 * backslash stays, for fnmatch(3) to read. Pure: options.c checks a list with it, and the
 * option fuzzer links it alone.
 */
#ifndef XFDR_RUNTIME_SYMBOLS_PATTERNS_H
#define XFDR_RUNTIME_SYMBOLS_PATTERNS_H

/* The most patterns one list holds, and its longest text (with its NUL). */
#define PATTERNS_MAX 64
#define PATTERNS_TEXT_MAX 2048

/*
 * patterns_split - split text in place at the commas no backslash quotes, into patterns (at
 * most PATTERNS_MAX). Returns the count, or -EINVAL with *why saying what is wrong: an empty
 * pattern, a backslash that ends the text, too many patterns.
 */
int patterns_split(char *text, const char **patterns, const char **why);

/*
 * patterns_check - 0 when text (NULL or "" for none) is a valid list, else -EINVAL with *why
 * (patterns_split()'s reasons, or longer than PATTERNS_TEXT_MAX - 1 bytes). Context: any.
 */
int patterns_check(const char *text, const char **why);

#endif /* XFDR_RUNTIME_SYMBOLS_PATTERNS_H */
