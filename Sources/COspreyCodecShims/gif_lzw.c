#include "COspreyCodecShims.h"

#include <string.h>

// GIF's variable-length LZW (GIF89a appendix F). giflib decodes it one byte and one stack push at a time. Here no
// string is ever rebuilt: every code's string already sits in the output, because a new code is always the previous
// code's string followed by the first byte of the one after it, and those are written next to each other. So each
// code is just (offset, length) into the output, and emitting it is a copy from earlier in the output, like LZ77.

#define OSPREY_LZW_MAX_CODES 4096

/// Copies `count` bytes from `source` to `target` = `source` + `distance` (forward, so an overlapping string repeats
/// itself as LZ77 requires). With `slack` bytes writable past `count`, and no overlap within a word, copies in 16-byte
/// steps, writing up to 15 bytes past the end that later strings overwrite.
static inline void osprey_lzw_copy(uint8_t *target, const uint8_t *source, size_t count, size_t distance,
                                   size_t slack) {
    if (distance >= 16 && slack >= 16) {
        for (size_t i = 0; i < count; i += 16) {
            memcpy(target + i, source + i, 16);
        }
        return;
    }
    for (size_t i = 0; i < count; i++) {
        target[i] = source[i];
    }
}

int64_t osprey_gif_lzw_decode(const uint8_t *data, size_t size, int32_t minimumCodeSize, uint8_t *output,
                              size_t outputSize, int32_t *sawEnd) {
    *sawEnd = 0;
    // The specification allows 2…8; giflib and browsers also accept 1 (some encoders write it for 2 colours).
    if (minimumCodeSize < 1 || minimumCodeSize > 8) {
        return -1;
    }
    // Where each code's string starts in the output, and its length. Literals (below `clear`) are not looked up.
    uint32_t start[OSPREY_LZW_MAX_CODES];
    uint16_t length[OSPREY_LZW_MAX_CODES];
    const uint32_t clear = 1u << minimumCodeSize;
    const uint32_t end = clear + 1;
    uint32_t next = clear + 2;
    uint32_t codeSize = (uint32_t)minimumCodeSize + 1;
    uint32_t mask = (1u << codeSize) - 1;
    // The previous emission: where it started and how long it was (0: none since the last clear).
    size_t previousStart = 0;
    size_t previousLength = 0;
    uint64_t accumulator = 0;
    uint32_t bits = 0;
    size_t position = 0;
    size_t offset = 0;
    if (outputSize > UINT32_MAX) {
        return -1;  // Offsets are 32-bit; the caller's pixel limits keep frames far below 4 G pixels.
    }

    while (position < outputSize) {
        if (bits < codeSize) {
            if (size - offset >= 8) {
                // Refill whole bytes from one unaligned 8-byte load.
                uint64_t word;
                memcpy(&word, data + offset, 8);
                accumulator |= word << bits;
                uint32_t taken = (63 - bits) >> 3;
                offset += taken;
                bits += taken * 8;
            } else {
                while (bits < codeSize) {
                    if (offset >= size) {
                        return (int64_t)position;
                    }
                    accumulator |= (uint64_t)data[offset++] << bits;
                    bits += 8;
                }
            }
        }
        uint32_t code = (uint32_t)accumulator & mask;
        accumulator >>= codeSize;
        bits -= codeSize;

        if (code == clear) {
            next = clear + 2;
            codeSize = (uint32_t)minimumCodeSize + 1;
            mask = (1u << codeSize) - 1;
            previousLength = 0;
            continue;
        }
        if (code == end) {
            *sawEnd = 1;
            return (int64_t)position;
        }
        if (previousLength == 0) {
            if (code >= clear) {
                return -1;  // the first code after a clear must be a literal
            }
            previousStart = position;
            previousLength = 1;
            output[position++] = (uint8_t)code;
            continue;
        }
        if (code > next || (code == next && next >= OSPREY_LZW_MAX_CODES)) {
            return -1;
        }
        if (next < OSPREY_LZW_MAX_CODES) {
            // The previous string plus the first byte of this one: in the output, exactly where the previous string
            // starts, one byte longer (also when `code` is this new code, the KwKwK case).
            start[next] = (uint32_t)previousStart;
            length[next] = (uint16_t)(previousLength + 1);
            next++;
            if (next == (1u << codeSize) && codeSize < 12) {
                codeSize++;
                mask = (1u << codeSize) - 1;
            }
        }
        size_t available = outputSize - position;
        previousStart = position;
        if (code < clear) {
            previousLength = 1;
            output[position++] = (uint8_t)code;
            continue;
        }
        size_t count = length[code];
        previousLength = count;
        // Clipped to the output: a string that would run past it ends the image.
        size_t written = count < available ? count : available;
        osprey_lzw_copy(output + position, output + start[code], written, position - start[code],
                        available - written);
        position += written;
    }
    return (int64_t)position;
}
