#include "jpeg_huffman.h"

#include "COspreyCodecShims.h"
#include "jpeg_error.h"
#include "jpeg_scan.h"

#include <stdlib.h>
#include <string.h>

// libjpeg-turbo's Huffman decoder reads a code through an 8-bit lookup, then its value bits with a second read, and
// checks every byte it loads for a marker. Here the scan is unstuffed once into a buffer of its own (restart markers
// and the marker after the scan found on the way), so the bit buffer is refilled with one 8-byte load; and a lookup
// of the next LOOKUP_BITS bits gives, for most symbols, the code and its value bits together: the zero run, the
// coefficient and the bits to drop. libjpeg's entropy module is kept and its decode_mcu alone is replaced, so every
// other stage (the coefficient controller, which zeroes each MCU's blocks before asking for them, the IDCT,
// upsampling and colour conversion, markers after the scan) is libjpeg's, and the pixels are the same.

// Bits one lookup resolves: 11 was the fastest of 9 to 12 on the proxy benchmark's 1920×1080 sources at 1/4
// (larger tables leave the L1 cache, smaller ones resolve fewer symbols).
#define LOOKUP_BITS 11
// Symbols resolved by the lookup read from one refill: each takes at most LOOKUP_BITS bits, and a refill leaves 56.
#define SYMBOLS_PER_REFILL 4
// Zero bytes after the unstuffed scan: the decoder loads 8 bytes at a time and checks its position after each MCU, and
// an MCU read from damaged data may run past the end first (10 blocks of 64 symbols of at most 31 bits: 2,480 bytes).
#define SCAN_PADDING 4096

// libjpeg's entropy decoder as jpegint.h declares it (not installed with libjpeg). Its first two members are the same
// in libjpeg-turbo 2.x and 3.x (3.x adds a lossless method after them); only decode_mcu is written.
struct osprey_jpeg_entropy_decoder {
    void (*start_pass)(j_decompress_ptr info);
    boolean (*decode_mcu)(j_decompress_ptr info, JBLOCKROW *blocks);
};

typedef struct {
    // For each value of the next LOOKUP_BITS bits, when the code they start with and its value bits lie within them:
    // the bits both take (bits 0–7), the zero run before the coefficient (8–15; 63 for an end of block, whose stored
    // 0 lands past the block's last coefficient read), the coefficient (16–31, two's complement). 0 when they do not.
    uint32_t resolved[1 << LOOKUP_BITS];
    // For each value of the next LOOKUP_BITS bits: the code's length (bits 8–12) and symbol (0–7) when the code lies
    // within them; 0 when it is longer.
    uint16_t codes[1 << LOOKUP_BITS];
    osprey_huffman_codes longer;
} osprey_huffman_lookup;

#define RESOLVED_BITS(entry) ((entry) & 255u)
#define RESOLVED_RUN(entry) (((entry) >> 8) & 255u)
#define RESOLVED_VALUE(entry) ((JCOEF)(int16_t)((entry) >> 16))
#define END_OF_BLOCK_RUN 63u

// Zigzag order to natural order, with the extra entries libjpeg's jpeg_natural_order has: a run that passes the end of
// a block (damaged data) stores at coefficient 63, as libjpeg does, and so does an end of block here.
static const uint8_t natural_order[64 + 64] = {
    0,  1,  8,  16, 9,  2,  3,  10, 17, 24, 32, 25, 18, 11, 4,  5,  12, 19, 26, 33, 40, 48, 41, 34, 27, 20,
    13, 6,  7,  14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51, 58, 59, 52, 45,
    38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63,
    63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63,
    63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63};

struct osprey_jpeg_huffman {
    osprey_huffman_lookup lookups[8];  // DC 0–3, AC 4–7; only those the scan uses are built
    // For each block of an MCU: its tables and the component whose DC prediction it continues.
    const osprey_huffman_lookup *dc[D_MAX_BLOCKS_IN_MCU], *ac[D_MAX_BLOCKS_IN_MCU];
    int component[D_MAX_BLOCKS_IN_MCU];
    int blocks;
    int predictions[MAX_COMPS_IN_SCAN];
    // The scan unstuffed, its restart intervals back to back (SCAN_PADDING zeros after), and where each ends.
    uint8_t *scan;
    size_t *intervalEnds;
    size_t interval;
    unsigned restartInterval, restartsToGo;
    uint64_t mcusLeft;
    // Where libjpeg's source resumes after the last MCU: the marker after the scan.
    const uint8_t *afterScan;
    size_t bytesAfterScan;
    // The bit reader: the next byte of `scan` to load, the bits loaded (left-aligned) and how many.
    size_t position;
    uint64_t bits;
    unsigned count;
};

// Builds the lookup of a table libjpeg has checked (jpeg_make_d_derived_tbl, when the scan started); 0 when its counts
// do not make a prefix code after all.
static int lookup_build(osprey_huffman_lookup *lookup, const JHUFF_TBL *table, int isAC) {
    if (!osprey_huffman_codes_build(&lookup->longer, &table->bits[1], table->huffval)) {
        return 0;
    }
    memset(lookup->resolved, 0, sizeof(lookup->resolved));
    memset(lookup->codes, 0, sizeof(lookup->codes));
    int32_t code = 0;
    int index = 0;
    for (int length = 1; length <= LOOKUP_BITS; length++, code <<= 1) {
        for (int i = 0; i < table->bits[length]; i++, index++, code++) {
            uint8_t symbol = table->huffval[index];
            unsigned size = isAC ? symbol & 15u : symbol, run = isAC ? symbol >> 4 : 0;
            if (isAC && size == 0 && run != 15) {
                // Any symbol without value bits but 16 zeros ends the block, as libjpeg reads it.
                run = END_OF_BLOCK_RUN;
            }
            uint32_t first = (uint32_t)code << (LOOKUP_BITS - length), span = 1u << (LOOKUP_BITS - length);
            for (uint32_t j = 0; j < span; j++) {
                lookup->codes[first + j] = (uint16_t)(length << 8 | symbol);
                if (size <= 15 && length + size <= LOOKUP_BITS) {
                    uint32_t v = ((first + j) >> (LOOKUP_BITS - length - size)) & ((1u << size) - 1);
                    lookup->resolved[first + j] =
                        (uint32_t)(length + size) | run << 8 | (uint32_t)(uint16_t)osprey_jpeg_extend(v, size) << 16;
                }
            }
        }
    }
    return 1;
}

// The symbol whose code starts `bits` (left-aligned, at least 16 valid) and its code's length; -1 for a code the
// table lacks.
static inline int lookup_symbol(const osprey_huffman_lookup *lookup, uint64_t bits, unsigned *length) {
    uint16_t entry = lookup->codes[bits >> (64 - LOOKUP_BITS)];
    if (entry != 0) {
        *length = entry >> 8;
        return entry & 255;
    }
    return osprey_huffman_codes_decode(&lookup->longer, bits, LOOKUP_BITS + 1, length);
}

static void give_up(j_decompress_ptr info) {
    longjmp(((osprey_jpeg_error *)info->err)->jump, OSPREY_JPEG_HUFFMAN_GAVE_UP);
}

// Whether the reader stopped where an interval's data ends: within its last byte (whose rest is padding).
static int interval_read_whole(const osprey_jpeg_huffman *decoder) {
    uint64_t consumed = (uint64_t)decoder->position * 8 - decoder->count;
    uint64_t end = (uint64_t)decoder->intervalEnds[decoder->interval] * 8;
    return consumed <= end && end - consumed < 8;
}

// The bit reader's state is in locals in the block loop.
#define REFILL() osprey_bits_refill(scan, &position, &bits, &count)
#define DROP(n)                                                                                                        \
    do {                                                                                                               \
        bits <<= (n);                                                                                                  \
        count -= (n);                                                                                                  \
    } while (0)

static boolean decode_mcu(j_decompress_ptr info, JBLOCKROW *blocks) {
    osprey_jpeg_huffman *decoder = ((osprey_jpeg_error *)info->err)->huffman;
    if (blocks == NULL) {
        give_up(info);  // libjpeg asks for MCUs it discards only when skipping or cropping, which the shim never does
    }
    if (decoder->restartInterval > 0) {
        if (decoder->restartsToGo == 0) {
            // The next interval: the last one read to its end, the DC predictions start over.
            if (!interval_read_whole(decoder)) {
                give_up(info);
            }
            decoder->position = decoder->intervalEnds[decoder->interval++];
            decoder->bits = 0;
            decoder->count = 0;
            memset(decoder->predictions, 0, sizeof(decoder->predictions));
            decoder->restartsToGo = decoder->restartInterval;
        }
        decoder->restartsToGo--;
    }
    const uint8_t *scan = decoder->scan;
    size_t position = decoder->position;
    uint64_t bits = decoder->bits;
    unsigned count = decoder->count;
    for (int b = 0; b < decoder->blocks; b++) {
        JCOEF *block = blocks[b][0];
        const osprey_huffman_lookup *dc = decoder->dc[b], *ac = decoder->ac[b];
        REFILL();
        uint32_t entry = dc->resolved[bits >> (64 - LOOKUP_BITS)];
        int difference;
        if (entry != 0) {
            DROP(RESOLVED_BITS(entry));
            difference = RESOLVED_VALUE(entry);
        } else {
            unsigned length;
            int size = lookup_symbol(dc, bits, &length);
            if (size < 0 || size > 15) {
                give_up(info);
            }
            DROP(length);
            difference = osprey_jpeg_extend(size > 0 ? (uint32_t)(bits >> (64 - size)) : 0, (unsigned)size);
            DROP((unsigned)size);
        }
        // libjpeg keeps the prediction in an int and stores it as a JCOEF: the same, without the undefined overflow.
        int *prediction = &decoder->predictions[decoder->component[b]];
        *prediction = (int)((unsigned)*prediction + (unsigned)difference);
        block[0] = (JCOEF)*prediction;
        for (unsigned k = 1; k < 64;) {
            REFILL();
            entry = ac->resolved[bits >> (64 - LOOKUP_BITS)];
            if (entry != 0) {
                int resolved = 0;
                do {
                    DROP(RESOLVED_BITS(entry));
                    k += RESOLVED_RUN(entry);
                    block[natural_order[k]] = RESOLVED_VALUE(entry);
                    k++;
                    entry = ac->resolved[bits >> (64 - LOOKUP_BITS)];
                } while (++resolved < SYMBOLS_PER_REFILL && k < 64 && entry != 0);
                continue;
            }
            // A code, or a code and its value bits, longer than the lookup: read just after a refill.
            unsigned length;
            int symbol = lookup_symbol(ac, bits, &length);
            if (symbol < 0) {
                give_up(info);
            }
            DROP(length);
            unsigned size = (unsigned)symbol & 15, run = (unsigned)symbol >> 4;
            if (size > 0) {
                k += run;
                block[natural_order[k]] = (JCOEF)osprey_jpeg_extend((uint32_t)(bits >> (64 - size)), size);
                DROP(size);
                k++;
            } else if (run == 15) {
                k += 16;
            } else {
                break;
            }
        }
    }
    decoder->position = position;
    decoder->bits = bits;
    decoder->count = count;
    if ((uint64_t)position * 8 - count > (uint64_t)decoder->intervalEnds[decoder->interval] * 8) {
        give_up(info);  // past the interval's data: truncated or damaged
    }
    if (--decoder->mcusLeft == 0) {
        if (!interval_read_whole(decoder)) {
            give_up(info);
        }
        // libjpeg reads on from the marker after the scan, as its own decoder would have left it.
        info->src->next_input_byte = decoder->afterScan;
        info->src->bytes_in_buffer = decoder->bytesAfterScan;
    }
    return TRUE;
}

// Unstuffs the scan from `start` into decoder->scan, interval after interval: 1 when it ends in a marker after the
// intervals the frame's restart interval makes, separated by restart markers numbered as libjpeg expects them.
static int unstuff_scan(osprey_jpeg_huffman *decoder, const uint8_t *data, size_t size, size_t start,
                        uint64_t mcus) {
    uint64_t expected = decoder->restartInterval > 0 ? (mcus + decoder->restartInterval - 1) / decoder->restartInterval
                                                     : 1;
    if (expected > size) {
        return 0;  // more restart markers than the file has bytes
    }
    decoder->intervalEnds = malloc((size_t)expected * sizeof(size_t));
    if (decoder->intervalEnds == NULL) {
        return 0;
    }
    size_t length = 0, position = start;
    for (uint64_t i = 0; i < expected; i++) {
        size_t marker;
        size_t added = osprey_jpeg_unstuff(data, size, position, decoder->scan + length, &marker);
        if (added == SIZE_MAX) {
            return 0;
        }
        length += added;
        decoder->intervalEnds[i] = length;
        uint8_t code = data[marker + 1];
        int restart = code >= 0xD0 && code <= 0xD7;
        if (i + 1 < expected ? code != 0xD0 + i % 8 : restart) {
            return 0;
        }
        position = marker + (restart ? 2 : 0);
    }
    memset(decoder->scan + length, 0, SCAN_PADDING);
    decoder->afterScan = data + position;
    decoder->bytesAfterScan = size - position;
    return 1;
}

osprey_jpeg_huffman *osprey_jpeg_huffman_install(j_decompress_ptr info, const uint8_t *data, size_t size) {
    // One interleaved scan of every component (libjpeg decodes it as it reads it: the one-pass coefficient
    // controller), Huffman-coded, 8-bit, sequential DCT (Ss 0, Se 63: not lossless), nothing read of it yet.
    if (info->progressive_mode || info->arith_code || info->data_precision != 8 || info->Ss != 0 || info->Se != 63
        || info->Ah != 0 || info->Al != 0 || info->comps_in_scan != info->num_components || info->buffered_image
        || info->blocks_in_MCU < 1 || info->blocks_in_MCU > D_MAX_BLOCKS_IN_MCU || info->output_scanline != 0
        || info->unread_marker != 0 || info->entropy == NULL || info->src == NULL
        || info->src->next_input_byte < data
        || info->src->next_input_byte + info->src->bytes_in_buffer != data + size) {
        return NULL;
    }
    osprey_jpeg_huffman *decoder = calloc(1, sizeof(osprey_jpeg_huffman));
    if (decoder == NULL) {
        return NULL;
    }
    size_t start = (size_t)(info->src->next_input_byte - data);
    decoder->restartInterval = info->restart_interval;
    decoder->restartsToGo = info->restart_interval;
    decoder->mcusLeft = (uint64_t)info->MCUs_per_row * info->MCU_rows_in_scan;
    decoder->blocks = info->blocks_in_MCU;
    decoder->scan = malloc(size - start + SCAN_PADDING);
    if (decoder->scan == NULL || decoder->mcusLeft == 0
        || !unstuff_scan(decoder, data, size, start, decoder->mcusLeft)) {
        osprey_jpeg_huffman_release(decoder);
        return NULL;
    }
    int built[8] = {0};
    for (int b = 0; b < info->blocks_in_MCU; b++) {
        int c = info->MCU_membership[b];
        const jpeg_component_info *component = c >= 0 && c < MAX_COMPS_IN_SCAN ? info->cur_comp_info[c] : NULL;
        int dcIndex = component != NULL ? component->dc_tbl_no : -1;
        int acIndex = component != NULL ? component->ac_tbl_no : -1;
        if (dcIndex < 0 || dcIndex > 3 || acIndex < 0 || acIndex > 3) {
            osprey_jpeg_huffman_release(decoder);
            return NULL;
        }
        const JHUFF_TBL *tables[2] = {info->dc_huff_tbl_ptrs[dcIndex], info->ac_huff_tbl_ptrs[acIndex]};
        int indices[2] = {dcIndex, 4 + acIndex};
        for (int t = 0; t < 2; t++) {
            if (!built[indices[t]]) {
                if (tables[t] == NULL || !lookup_build(&decoder->lookups[indices[t]], tables[t], t == 1)) {
                    osprey_jpeg_huffman_release(decoder);
                    return NULL;
                }
                built[indices[t]] = 1;
            }
        }
        decoder->dc[b] = &decoder->lookups[dcIndex];
        decoder->ac[b] = &decoder->lookups[4 + acIndex];
        decoder->component[b] = c;
    }
    ((osprey_jpeg_error *)info->err)->huffman = decoder;
    ((struct osprey_jpeg_entropy_decoder *)info->entropy)->decode_mcu = decode_mcu;
    return decoder;
}

void osprey_jpeg_huffman_release(osprey_jpeg_huffman *decoder) {
    if (decoder != NULL) {
        free(decoder->scan);
        free(decoder->intervalEnds);
        free(decoder);
    }
}
