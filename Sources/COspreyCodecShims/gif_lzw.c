#include "COspreyCodecShims.h"

#include <string.h>

// GIF's variable-length LZW (GIF89a appendix F). giflib decodes it one byte and one stack push at a time; this
// decoder keeps, for every code, its length and first byte, and writes each string straight into the output from
// its end backwards, so no stack and no per-pixel call.

#define OSPREY_LZW_MAX_CODES 4096

int64_t osprey_gif_lzw_decode(const uint8_t *data, size_t size, int32_t minimumCodeSize, uint8_t *output,
                              size_t outputSize, int32_t *sawEnd) {
    *sawEnd = 0;
    // The specification allows 2…8; giflib and browsers also accept 1 (some encoders write it for 2 colours).
    if (minimumCodeSize < 1 || minimumCodeSize > 8) {
        return -1;
    }
    uint16_t prefix[OSPREY_LZW_MAX_CODES];
    uint8_t suffix[OSPREY_LZW_MAX_CODES];
    uint8_t first[OSPREY_LZW_MAX_CODES];
    uint16_t length[OSPREY_LZW_MAX_CODES];
    const uint32_t clear = 1u << minimumCodeSize;
    const uint32_t end = clear + 1;
    for (uint32_t code = 0; code < clear; code++) {
        prefix[code] = 0;
        suffix[code] = (uint8_t)code;
        first[code] = (uint8_t)code;
        length[code] = 1;
    }
    uint32_t next = clear + 2;
    uint32_t codeSize = (uint32_t)minimumCodeSize + 1;
    uint32_t mask = (1u << codeSize) - 1;
    int32_t previous = -1;
    uint64_t accumulator = 0;
    uint32_t bits = 0;
    size_t position = 0;
    size_t offset = 0;

    while (position < outputSize) {
        while (bits < codeSize) {
            if (offset >= size) {
                return (int64_t)position;
            }
            accumulator |= (uint64_t)data[offset++] << bits;
            bits += 8;
        }
        uint32_t code = (uint32_t)accumulator & mask;
        accumulator >>= codeSize;
        bits -= codeSize;

        if (code == clear) {
            next = clear + 2;
            codeSize = (uint32_t)minimumCodeSize + 1;
            mask = (1u << codeSize) - 1;
            previous = -1;
            continue;
        }
        if (code == end) {
            *sawEnd = 1;
            return (int64_t)position;
        }
        if (previous < 0) {
            if (code >= clear) {
                return -1;  // the first code after a clear must be a literal
            }
            output[position++] = (uint8_t)code;
            previous = (int32_t)code;
            continue;
        }
        uint32_t stringCode;
        uint8_t firstByte;
        if (code < next) {
            stringCode = code;
            firstByte = first[code];
        } else if (code == next && next < OSPREY_LZW_MAX_CODES) {
            // KwKwK: the string of the previous code and its own first byte.
            stringCode = (uint32_t)previous;
            firstByte = first[previous];
        } else {
            return -1;
        }
        if (next < OSPREY_LZW_MAX_CODES) {
            prefix[next] = (uint16_t)previous;
            suffix[next] = firstByte;
            first[next] = first[previous];
            length[next] = (uint16_t)(length[previous] + 1);
            next++;
            if (next == (1u << codeSize) && codeSize < 12) {
                codeSize++;
                mask = (1u << codeSize) - 1;
            }
        }
        // Write the string for `code` (now defined, also in the KwKwK case) from its end backwards, clipped to the
        // output.
        stringCode = code;
        size_t count = length[stringCode];
        size_t available = outputSize - position;
        size_t skip = count > available ? count - available : 0;
        uint32_t walk = stringCode;
        for (size_t i = 0; i < skip; i++) {
            walk = prefix[walk];
        }
        for (size_t i = count - skip; i > 0; i--) {
            output[position + i - 1] = suffix[walk];
            walk = prefix[walk];
        }
        position += count - skip;
        previous = (int32_t)code;
    }
    return (int64_t)position;
}
