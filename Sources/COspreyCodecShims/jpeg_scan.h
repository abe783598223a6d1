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

/// Tops up a bit buffer (`*bits`, left-aligned, `*count` valid) reading `data` from `*position` (the next byte not yet
/// in it) to at least 56 valid bits, with one 8-byte load: `data` needs 8 readable bytes from `*position`.
static inline void osprey_bits_refill(const uint8_t *data, size_t *position, uint64_t *bits, unsigned *count) {
    *bits |= osprey_load_be64(data + *position) >> *count;
    *position += (63 - *count) >> 3;
    *count |= 56;
}

/// A coefficient's `size` value bits `v` as JPEG's EXTEND reads them: a leading 0 makes it negative.
static inline int osprey_jpeg_extend(uint32_t v, unsigned size) {
    return size == 0 ? 0 : v < (1u << (size - 1)) ? (int)v - (int)((1u << size) - 1) : (int)v;
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

/// The canonical decode of a Huffman table's codes, for those longer than a lookup table covers.
typedef struct {
    int32_t maxCode[17];  // the largest code of each length, -1 when none
    int32_t offset[17];   // the index in `symbols` of a length's first code, less that code
    uint8_t symbols[256];
} osprey_huffman_codes;

/// Sets `codes` from a DHT table's counts of codes of each length, 1 to 16, and its symbols in code order; 0 when the
/// counts do not make a prefix code.
static inline int osprey_huffman_codes_build(osprey_huffman_codes *codes, const uint8_t counts[16],
                                             const uint8_t symbols[256]) {
    int32_t code = 0;
    int index = 0;
    for (int length = 1; length <= 16; length++) {
        codes->offset[length] = index - code;
        code += counts[length - 1];
        index += counts[length - 1];
        if (code > (1 << length) || index > 256) {
            return 0;
        }
        codes->maxCode[length] = counts[length - 1] > 0 ? code - 1 : -1;
        code <<= 1;
    }
    memcpy(codes->symbols, symbols, sizeof(codes->symbols));
    return 1;
}

/// The symbol whose code, `from` to 16 bits long, starts `bits` (left-aligned, at least 16 valid), and the code's
/// length; -1 when the table has none.
static inline int osprey_huffman_codes_decode(const osprey_huffman_codes *codes, uint64_t bits, int from,
                                              unsigned *length) {
    for (int l = from; l <= 16; l++) {
        int32_t code = (int32_t)(bits >> (64 - l));
        if (code <= codes->maxCode[l]) {
            *length = (unsigned)l;
            return codes->symbols[(codes->offset[l] + code) & 255];
        }
    }
    return -1;
}

#endif
