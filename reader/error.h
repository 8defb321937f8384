/*
 * reader/error.h - how the reader words an error, for the libraries built on it (the rebuild
 * library words its own the same way): one line "NAME: offset N: expected ..., found ...".
 */
#ifndef XFDR_READER_ERROR_H
#define XFDR_READER_ERROR_H

#include <stdint.h>

#include "xfdr/reader.h"

/* Fill err (when not NULL) with "NAME: offset N: " and the formatted text; returns -1. */
int rd_fail_name(const char *name, struct xfdr_error *err, uint64_t offset, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif /* XFDR_READER_ERROR_H */
