#ifndef OSPREY_JPEG_SCAN_H
#define OSPREY_JPEG_SCAN_H

// Reading a JPEG's entropy-coded data: shared by the readers of sequential scans (private to this target).

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint64_t osprey_load_be64(const uint8_t *p) {
    uint64_t value;
    memcpy(&value, p, 8);
    return __builtin_bswap64(value);
}

/// The entropy-coded data from `start` to the next marker that is not a stuffed zero, unstuffed into `out` (0xFF 0x00
/// becomes 0xFF; fill bytes before a marker go): returns its length and sets *marker to the marker's position, or
/// returns SIZE_MAX when the data ends first. `out` needs room for `size - start` bytes.
static inline size_t osprey_jpeg_unstuff(const uint8_t *data, size_t size, size_t start, uint8_t *out,
                                         size_t *marker) {
    size_t length = 0;
    for (size_t position = start;;) {
        const uint8_t *ff = memchr(data + position, 0xFF, size - position);
        if (ff == NULL || (size_t)(ff - data) + 1 >= size) {
            return SIZE_MAX;
        }
        size_t at = (size_t)(ff - data);
        memcpy(out + length, data + position, at - position);
        length += at - position;
        if (data[at + 1] == 0x00) {
            out[length++] = 0xFF;
            position = at + 2;
        } else if (data[at + 1] == 0xFF) {  // a fill byte before the marker
            position = at + 1;
        } else {
            *marker = at;
            return length;
        }
    }
}

#endif
