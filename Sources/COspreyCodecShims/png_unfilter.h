#ifndef OSPREY_PNG_UNFILTER_H
#define OSPREY_PNG_UNFILTER_H

// Reversing PNG's per-row filters for 8-bit samples (private to this target; used by the PNG fast path).

#include <stddef.h>
#include <stdint.h>

/// Reverses filter `filter` (0 None, 1 Sub, 2 Up, 3 Average, 4 Paeth) over one row of `length` bytes with
/// `bytesPerPixel` 1…4, reading the filtered bytes from `in` and the previous reconstructed row from `previous` (all
/// zeros for the first row), and writing the reconstructed bytes to `out`.
///
/// `out` may be `in` itself or start before it in the same buffer (the fast path compacts rows in place): every byte
/// of `in` is read before the byte of `out` at the same index is written, and `out` is written strictly in order.
/// `previous` must not overlap `out`. Returns 0, or -1 for a filter type above 4.
int osprey_png_unfilter_row(int filter, const uint8_t *in, const uint8_t *previous, uint8_t *out, size_t length,
                            unsigned bytesPerPixel);

#endif
