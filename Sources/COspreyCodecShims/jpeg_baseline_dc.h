#ifndef OSPREY_JPEG_BASELINE_DC_H
#define OSPREY_JPEG_BASELINE_DC_H

// A sequential JPEG rewritten for a decode at scale 1/8 (private to this target).

#include <stddef.h>
#include <stdint.h>

/// A copy of the sequential (Huffman, 8-bit, one interleaved scan) JPEG `data` whose blocks of the components marked
/// in `dcOnly` (indexed by component id) keep their DC coefficient alone: the same pixels at 1/8 for less decoding.
/// Returns the copy's length and sets *copy (free() it), or 0 with *copy NULL when the file is not of that kind, its
/// scan does not read cleanly to the end, or `cancelled` (when not NULL) became non-zero: the file is then decoded as
/// it is.
size_t osprey_jpeg_baseline_without_ac(const uint8_t *data, size_t size, const uint8_t dcOnly[256],
                                       const int32_t *cancelled, uint8_t **copy);

#endif
