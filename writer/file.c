/*
 * writer/file.c - the file writer: header, then whole buffers closed by EndOfBuffer and zeros.
 *
 * A v1 file is the 32-byte header followed by buffers of exactly buffer_size bytes each:
 *
 *   [ records used_bytes ][ EndOfBuffer 16 ][ zeros ]   when 16 <= tail
 *   [ records used_bytes == buffer_size ]               exactly full: no EndOfBuffer
 *
 * A tail of 1..15 bytes can hold no EndOfBuffer; the producer's wr_fits() never leaves one, so
 * it is refused rather than written as a buffer no reader can parse. The padding must be zero:
 * llvm-xray 14 does not skip it but parses it as records and ignores them until the next
 * NewBuffer, so zeros (harmless Entry records of function 0) are what keeps it on track.
 *
 * Everything here may run in a signal handler (xfdr_flush() is async-signal-safe): the only
 * system calls are write(2) and pwrite(2), the padding comes from a static block of zeros, nothing
 * is allocated or locked, and the caller's errno is given back unchanged. Writes past
 * RLIMIT_FSIZE are refused with -EFBIG (writer/fsize.h: fstat, lseek, getrlimit).
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "writer/fsize.h"
#include "writer/file.h"
#include "writer/encode.h"
#include "xfdr/format.h"

/* Source of the padding; its size only sets how many write(2) calls a large tail takes. */
static const uint8_t wr_zeros[4096];

size_t wr_encode_file_header(uint8_t out[32], const struct wr_file_header *h)
{
	const int big = h->order == WR_ORDER_HOST ? WR_BIG_ENDIAN : h->order == WR_ORDER_BIG;
	uint32_t bits = 0;

	if (h->constant_tsc)
		bits |= XFDR_HDR_CONSTANT_TSC;
	if (h->nonstop_tsc)
		bits |= XFDR_HDR_NONSTOP_TSC;
	memset(out, 0, XFDR_FILE_HEADER_BYTES);
	wr_put16_order(out + XFDR_HDR_VERSION_OFF, XFDR_FORMAT_VERSION, big);
	wr_put16_order(out + XFDR_HDR_TYPE_OFF, XFDR_TRACE_TYPE_FDR, big);
	wr_put32_order(out + XFDR_HDR_BITFIELD_OFF, bits, big);
	wr_put64_order(out + XFDR_HDR_CYCLE_FREQUENCY_OFF, h->cycle_frequency_hz, big);
	wr_put64_order(out + XFDR_HDR_BUFFER_SIZE_OFF, h->buffer_bytes, big);
	return XFDR_FILE_HEADER_BYTES;
}

/*
 * Write all n bytes, retrying on EINTR and after short writes: at the file position, or at
 * offset with pwrite(2) when offset >= 0. A write that would take the file past RLIMIT_FSIZE
 * is refused with -EFBIG before any byte is written (the kernel would write up to the limit,
 * then kill the program with SIGXFSZ). Returns 0 or a negative errno; a write that reports
 * 0 bytes for a non-empty request would loop forever, so it is -EIO. Leaves errno changed:
 * the public entry points restore it.
 */
static int write_all_at(int fd, const uint8_t *p, size_t n, int64_t offset)
{
	ssize_t k;
	int rc = fsize_check_write(fd, offset, n);

	if (rc)
		return rc;
	while (n) {
		k = offset < 0 ? write(fd, p, n) : pwrite(fd, p, n, (off_t)offset);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (k == 0)
			return -EIO;
		p += k;
		n -= (size_t)k;
		if (offset >= 0)
			offset += k;
	}
	return 0;
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
	return write_all_at(fd, p, n, -1);
}

static int write_zeros(int fd, size_t n)
{
	size_t chunk;
	int rc;

	while (n) {
		chunk = n < sizeof(wr_zeros) ? n : sizeof(wr_zeros);
		rc = write_all(fd, wr_zeros, chunk);
		if (rc)
			return rc;
		n -= chunk;
	}
	return 0;
}

/* The -EINVAL rules shared by wr_write_buffer() and wr_close_buffer(). */
static int check_tail(size_t used_bytes, size_t buffer_bytes)
{
	size_t tail;

	if (used_bytes > buffer_bytes)
		return -EINVAL;
	tail = buffer_bytes - used_bytes;
	if (tail && tail < XFDR_MD_RECORD_BYTES)
		return -EINVAL;
	return 0;
}

int wr_write_file_header(int fd, const struct wr_file_header *h)
{
	uint8_t hdr[XFDR_FILE_HEADER_BYTES];
	int saved = errno;
	int rc;

	wr_encode_file_header(hdr, h);
	rc = write_all(fd, hdr, sizeof(hdr));
	errno = saved;
	return rc;
}

int wr_write_buffer(int fd, const uint8_t *data, size_t used_bytes, size_t buffer_bytes)
{
	uint8_t eob[XFDR_MD_RECORD_BYTES];
	int saved = errno;
	int rc;

	rc = check_tail(used_bytes, buffer_bytes);
	if (rc)
		return rc;
	rc = write_all(fd, data, used_bytes);
	if (rc || used_bytes == buffer_bytes)
		goto out;
	wr_end_of_buffer(eob);
	rc = write_all(fd, eob, sizeof(eob));
	if (rc)
		goto out;
	rc = write_zeros(fd, buffer_bytes - used_bytes - sizeof(eob));
out:
	errno = saved;
	return rc;
}

int wr_close_buffer_order(uint8_t *data, size_t used_bytes, size_t buffer_bytes, int big)
{
	size_t after;
	int rc;

	rc = check_tail(used_bytes, buffer_bytes);
	if (rc || used_bytes == buffer_bytes)
		return rc;
	after = used_bytes + wr_end_of_buffer_order(data + used_bytes, big);
	memset(data + after, 0, buffer_bytes - after);
	return 0;
}

int wr_close_buffer(uint8_t *data, size_t used_bytes, size_t buffer_bytes)
{
	return wr_close_buffer_order(data, used_bytes, buffer_bytes, WR_BIG_ENDIAN);
}

int wr_write_buffer_at(int fd, uint8_t *data, size_t used_bytes, size_t buffer_bytes,
		       uint64_t offset)
{
	int saved = errno;
	int rc = wr_close_buffer(data, used_bytes, buffer_bytes);

	if (!rc)
		rc = write_all_at(fd, data, buffer_bytes, (int64_t)offset);
	errno = saved;
	return rc;
}
