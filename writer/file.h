/*
 * writer/file.h - write a whole FDR v1 file: one header, then complete thread buffers.
 *
 * Used by the flusher, possibly from a signal handler: only write(2) and pwrite(2) (looped on
 * EINTR and short writes) are called, no allocation, no locks, no stdio. errno is preserved.
 */
#ifndef XFDR_WRITER_FILE_H
#define XFDR_WRITER_FILE_H

#include <stddef.h>
#include <stdint.h>

/* The byte order of a file: this machine's, or a named one (a rebuilt trace keeps its own). */
enum wr_byte_order { WR_ORDER_HOST = 0, WR_ORDER_LITTLE, WR_ORDER_BIG };

struct wr_file_header {
	uint64_t cycle_frequency_hz;
	uint64_t buffer_bytes; /* every buffer in the file has exactly this size */
	int constant_tsc;
	int nonstop_tsc;
	enum wr_byte_order order; /* 0: this machine's */
};

/* Encode the 32-byte file header (version 1, type 1) into out, in h's order. Returns 32. */
size_t wr_encode_file_header(uint8_t out[32], const struct wr_file_header *h);

/*
 * wr_write_file_header - encode and write the header to fd.
 * Returns 0, or a negative errno from write(2).
 */
int wr_write_file_header(int fd, const struct wr_file_header *h);

/*
 * wr_write_buffer - write one complete buffer of buffer_bytes bytes to fd.
 * data[0, used_bytes) holds whole records starting with the NewBuffer preamble. They are
 * written as they are, followed by an EndOfBuffer record and zero padding up to buffer_bytes;
 * when used_bytes == buffer_bytes the buffer is exactly full and gets no EndOfBuffer.
 * Context: async-signal-safe; data may be a live buffer whose prefix the caller has acquired.
 * Returns 0, -EINVAL if used_bytes > buffer_bytes or the tail (buffer_bytes - used_bytes) is
 * 1..15 bytes (no EndOfBuffer fits: the producer broke wr_fits()), or a negative errno from
 * write(2).
 */
int wr_write_buffer(int fd, const uint8_t *data, size_t used_bytes, size_t buffer_bytes);

/*
 * wr_close_buffer - close an in-memory buffer in place: EndOfBuffer at used_bytes and zeroes
 * up to buffer_bytes (nothing when exactly full). Same -EINVAL rules as wr_write_buffer().
 * Returns 0. Used to build whole files in memory (tests, snapshots).
 */
int wr_close_buffer(uint8_t *data, size_t used_bytes, size_t buffer_bytes);
/* The same in the byte order big tells (1: big-endian), for a buffer of another machine. */
int wr_close_buffer_order(uint8_t *data, size_t used_bytes, size_t buffer_bytes, int big);

/*
 * wr_write_buffer_at - close the buffer in data in place (wr_close_buffer(): data must hold
 * buffer_bytes) and write it whole at a file offset with pwrite(2), so that buffers can be
 * written in any order. Context: async-signal-safe. Returns as wr_write_buffer().
 */
int wr_write_buffer_at(int fd, uint8_t *data, size_t used_bytes, size_t buffer_bytes,
		       uint64_t offset);

#endif /* XFDR_WRITER_FILE_H */
