#include "jpeg_baseline_dc.h"

#include "COspreyCodecShims.h"
#include "jpeg_scan.h"

#include <stdlib.h>
#include <string.h>

// At scale 1/8 libjpeg scales a component whose blocks each become one pixel with a 1×1 IDCT, which reads the DC
// coefficient alone; it still decodes every AC coefficient of those blocks, since a Huffman-coded scan can only be read
// symbol by symbol, and that is most of the work of a large sequential file. This walk reads the scan once, only for
// where each block ends (tables that read past several symbols and their value bits in one lookup), and writes a scan
// in which each such block is its DC difference and an end of block; the blocks of other components (subsampled
// chroma, which 1/8 scales up through a larger IDCT that reads AC coefficients) are copied bit for bit, and so is
// every segment around the scan. libjpeg then decodes the copy to the same pixels.

// Bits one lookup of a single symbol's code resolves; longer codes go through the canonical decode.
#define FAST_BITS 10
// Bits one lookup of several AC symbols covers.
#define MULTI_BITS 12
// Zero bytes after a segment's unstuffed data: the reader loads 8 bytes at a time, and a block read from damaged data
// may run past the end (64 symbols of at most 31 bits, under 256 bytes) before the check after each block sees it.
#define READ_PADDING 512
// MCUs between two looks at the cancellation flag.
#define MCUS_PER_CANCEL_CHECK 4096

// A DHT table as the file gives it; built into a decoding table when a scan uses it.
typedef struct {
    uint8_t counts[16];
    uint8_t symbols[256];
    uint8_t defined;
} huffman_spec;

typedef struct {
    // For each value of the next FAST_BITS bits: the symbol whose code they start with, packed by FAST_ENTRY; 0 when
    // the code is longer.
    uint32_t fast[1 << FAST_BITS];
    // AC tables: for each value of the next MULTI_BITS bits, the symbols that lie whole within them (codes and value
    // bits), packed by MULTI_ENTRY; 0 when the first does not.
    uint32_t multi[1 << MULTI_BITS];
    // Codes longer than FAST_BITS.
    osprey_huffman_codes longer;
    // AC tables: a code that ends a block (end of block: a symbol with no value bits that is not the run of 16 zeros)
    // and its length, 0 when the table has none.
    uint32_t endCode;
    uint8_t endLength;
} huffman_table;

// A single symbol: its code and value bits together (bits 0–5), the symbol (6–13).
#define FAST_ENTRY(total, symbol) ((uint32_t)(total) | (uint32_t)(symbol) << 6)
#define FAST_TOTAL(entry) ((entry) & 63u)
#define FAST_SYMBOL(entry) ((entry) >> 6)
// Several AC symbols: bits they take (0–4), coefficients they advance over (5–12: up to 12 runs of 16 zeros), whether
// the last ends the block (13).
#define MULTI_ENTRY(taken, advanced, ended) ((uint32_t)(taken) | (uint32_t)(advanced) << 5 | (uint32_t)(ended) << 13)
#define MULTI_TAKEN(entry) ((entry) & 31u)
#define MULTI_ADVANCED(entry) (((entry) >> 5) & 255u)
#define MULTI_ENDED(entry) (((entry) >> 13) & 1u)

// How far an AC symbol moves through the block, as libjpeg reads it: a value after `symbol >> 4` zeros, 16 zeros
// (0xF0), or, for any other symbol without value bits, the end of the block (0).
static inline unsigned ac_advance(unsigned symbol) {
    return (symbol & 15) != 0 ? (symbol >> 4) + 1 : (symbol >> 4) == 15 ? 16 : 0;
}

// Fills `multi` from `fast`: for each run of MULTI_BITS bits, the symbols that lie whole within it, up to the first
// that ends a block.
static void huffman_build_multi(huffman_table *table) {
    for (uint32_t bits = 0; bits < (1u << MULTI_BITS); bits++) {
        unsigned taken = 0, advanced = 0, ended = 0;
        while (taken < MULTI_BITS && !ended) {
            // The bits from `taken` on, zeros after the run's end: a code found within what is left is the one there
            // (no code is a prefix of another), one that reaches past it is not counted.
            uint32_t window = (bits << taken) & ((1u << MULTI_BITS) - 1);
            uint32_t entry = table->fast[window >> (MULTI_BITS - FAST_BITS)];
            if (entry == 0 || taken + FAST_TOTAL(entry) > MULTI_BITS) {
                break;
            }
            unsigned advance = ac_advance(FAST_SYMBOL(entry));
            taken += FAST_TOTAL(entry);
            advanced += advance;
            ended = advance == 0;
        }
        table->multi[bits] = taken == 0 ? 0 : MULTI_ENTRY(taken, advanced, ended);
    }
}

// Builds a decoding table; 0 when the counts do not make a prefix code or a symbol has more than 15 value bits.
static int huffman_build(huffman_table *table, const huffman_spec *spec, int isAC) {
    if (!osprey_huffman_codes_build(&table->longer, spec->counts, spec->symbols)) {
        return 0;
    }
    memset(table->fast, 0, sizeof(table->fast));
    table->endLength = 0;
    int32_t code = 0;
    int index = 0;
    for (int length = 1; length <= 16; length++, code <<= 1) {
        for (int i = 0; i < spec->counts[length - 1]; i++, index++, code++) {
            uint8_t symbol = spec->symbols[index];
            unsigned valueBits = isAC ? symbol & 15u : symbol;
            if (valueBits > 15) {
                return 0;
            }
            if (isAC && table->endLength == 0 && ac_advance(symbol) == 0) {
                table->endCode = (uint32_t)code;
                table->endLength = (uint8_t)length;
            }
            if (length <= FAST_BITS) {
                uint32_t first = (uint32_t)code << (FAST_BITS - length), span = 1u << (FAST_BITS - length);
                for (uint32_t j = 0; j < span; j++) {
                    table->fast[first + j] = FAST_ENTRY((unsigned)length + valueBits, symbol);
                }
            }
        }
    }
    if (isAC) {
        huffman_build_multi(table);
    }
    return 1;
}

// The symbol whose code starts `bits` (left-aligned, at least 31 valid), and in *total the bits its code and its value
// take (a DC symbol is the count of value bits; an AC symbol's low nibble is); -1 for a code the table lacks.
static inline int huffman_read(const huffman_table *table, uint64_t bits, int isAC, unsigned *total) {
    uint32_t entry = table->fast[bits >> (64 - FAST_BITS)];
    if (entry != 0) {
        *total = FAST_TOTAL(entry);
        return (int)FAST_SYMBOL(entry);
    }
    unsigned codeLength;
    int symbol = osprey_huffman_codes_decode(&table->longer, bits, FAST_BITS + 1, &codeLength);
    unsigned valueBits = isAC ? (unsigned)symbol & 15 : (unsigned)symbol;
    if (symbol < 0 || valueBits > 15) {
        return -1;
    }
    *total = codeLength + valueBits;
    return symbol;
}

// Reads a segment's unstuffed entropy-coded data, most significant bit first.
typedef struct {
    const uint8_t *data;  // READ_PADDING zero bytes after its end
    size_t position;      // the next byte to load
    uint64_t bits;        // left-aligned
    unsigned count;       // valid bits in `bits`
} bit_reader;

// Tops the reader up to at least 56 bits.
static inline void reader_fill(bit_reader *reader) {
    osprey_bits_refill(reader->data, &reader->position, &reader->bits, &reader->count);
}

static inline void reader_skip(bit_reader *reader, unsigned bits) {
    reader->bits <<= bits;
    reader->count -= bits;
}

static inline uint64_t reader_consumed(const bit_reader *reader) {
    return (uint64_t)reader->position * 8 - reader->count;
}

// Writes entropy-coded data, stuffing a zero byte after every 0xFF.
typedef struct {
    uint8_t *out;
    size_t length, capacity;
    uint64_t bits;  // pending, right-aligned
    unsigned count;
} bit_writer;

// Makes room for `extra` more bytes; 0 when out of memory.
static int writer_reserve(bit_writer *writer, size_t extra) {
    if (writer->capacity - writer->length >= extra) {
        return 1;
    }
    size_t capacity = writer->capacity * 2 > writer->length + extra ? writer->capacity * 2 : writer->length + extra;
    uint8_t *grown = realloc(writer->out, capacity);
    if (grown == NULL) {
        return 0;
    }
    writer->out = grown;
    writer->capacity = capacity;
    return 1;
}

static inline void writer_byte(bit_writer *writer, uint8_t byte) {
    writer->out[writer->length++] = byte;
    if (byte == 0xFF) {
        writer->out[writer->length++] = 0;
    }
}

// Appends the low `n` (1…32) bits of `value`.
static inline void writer_put(bit_writer *writer, uint64_t value, unsigned n) {
    writer->bits = (writer->bits << n) | (value & ((1ull << n) - 1));
    writer->count += n;
    if (writer->count >= 32) {
        writer->count -= 32;
        uint32_t word = (uint32_t)(writer->bits >> writer->count), inverted = ~word;
        if (((inverted - 0x01010101u) & ~inverted & 0x80808080u) == 0) {  // no 0xFF byte: all four at once
            uint32_t bigEndian = __builtin_bswap32(word);
            memcpy(writer->out + writer->length, &bigEndian, 4);
            writer->length += 4;
        } else {
            for (int shift = 24; shift >= 0; shift -= 8) {
                writer_byte(writer, (uint8_t)(word >> shift));
            }
        }
    }
}

// Appends `n` bits of the unstuffed `data` from bit `start` on.
static inline void writer_copy(bit_writer *writer, const uint8_t *data, uint64_t start, uint64_t n) {
    for (; n >= 32; start += 32, n -= 32) {
        writer_put(writer, (osprey_load_be64(data + (start >> 3)) << (start & 7)) >> 32, 32);
    }
    if (n > 0) {
        writer_put(writer, (osprey_load_be64(data + (start >> 3)) << (start & 7)) >> (64 - n), (unsigned)n);
    }
}

// Ends the data before a marker: the last byte filled with 1 bits, as an encoder does.
static void writer_flush(bit_writer *writer) {
    unsigned padding = (8 - writer->count % 8) % 8;
    if (padding > 0) {
        writer_put(writer, 0xFF, padding);
    }
    while (writer->count > 0) {
        writer->count -= 8;
        writer_byte(writer, (uint8_t)(writer->bits >> writer->count));
    }
}

// Reads one block's DC difference: its bits (code and value, returned) and, when `difference` is not NULL, its value.
// 0 on a code the table lacks.
static inline unsigned read_dc(bit_reader *reader, const huffman_table *dc, int *difference) {
    reader_fill(reader);
    unsigned total;
    int symbol = huffman_read(dc, reader->bits, 0, &total);
    if (symbol < 0) {
        return 0;
    }
    unsigned valueBits = (unsigned)symbol;
    if (difference != NULL) {
        // The value bits after the code.
        int value = 0;
        if (valueBits > 0) {
            uint32_t bits = (uint32_t)((reader->bits << (total - valueBits)) >> (64 - valueBits));
            value = osprey_jpeg_extend(bits, valueBits);
        }
        *difference = value;
    }
    return total;
}

// Reads past one block's AC coefficients. 0 on a code the table lacks.
static inline int skip_ac(bit_reader *reader, const huffman_table *ac) {
    for (unsigned k = 1; k < 64;) {
        reader_fill(reader);
        // Up to four lookups of several symbols (12 bits at most each) from one fill: the fill's load stays off the
        // chain from one lookup to the next.
        uint32_t several = ac->multi[reader->bits >> (64 - MULTI_BITS)];
        int lookups = 0;
        while (several != 0 && k + MULTI_ADVANCED(several) < 64) {  // every symbol of the lookup within this block
            reader_skip(reader, MULTI_TAKEN(several));
            k += MULTI_ADVANCED(several);
            if (MULTI_ENDED(several)) {
                return 1;
            }
            if (++lookups == 4) {
                break;
            }
            several = ac->multi[reader->bits >> (64 - MULTI_BITS)];
        }
        if (lookups == 4) {
            continue;
        }
        reader_fill(reader);
        unsigned total;
        int symbol = huffman_read(ac, reader->bits, 1, &total);
        if (symbol < 0) {
            return 0;
        }
        reader_skip(reader, total);
        unsigned advance = ac_advance((unsigned)symbol);
        if (advance == 0) {
            break;
        }
        k += advance;
    }
    return 1;
}

// Reads one block and writes it: as it is, or with `dcOnly` its DC difference and an end of block. 0 on a code the
// tables lack.
static inline int copy_block(bit_reader *reader, bit_writer *writer, const huffman_table *dc, const huffman_table *ac,
                             int dcOnly) {
    uint64_t start = reader_consumed(reader);
    unsigned total = read_dc(reader, dc, NULL);
    if (total == 0) {
        return 0;
    }
    if (dcOnly) {
        writer_put(writer, reader->bits >> (64 - total), total);
    }
    reader_skip(reader, total);
    if (!skip_ac(reader, ac)) {
        return 0;
    }
    if (dcOnly) {
        writer_put(writer, ac->endCode, ac->endLength);
    } else {
        writer_copy(writer, reader->data, start, reader_consumed(reader) - start);
    }
    return 1;
}

// The 1×1 IDCT's output limit, as libjpeg-turbo's `sample_range_limit` table gives it for a value `& 1023`: -128…127
// plus 128, 128…511 clipped to 255, -512…-129 to 0 (and wrapping beyond, as the table does).
static inline uint8_t idct_range_limit(int value) {
    unsigned index = (unsigned)value & 1023;
    return index < 128 ? (uint8_t)(index + 128) : index < 512 ? 255 : index < 896 ? 0 : (uint8_t)(index - 896);
}

// Reads one block of a component scaled by a 1×1 IDCT and stores its sample: the DC coefficient (the prediction plus
// this block's difference, kept as libjpeg keeps it in 16 bits), dequantized, divided by 8 and limited.
static inline int sample_block(bit_reader *reader, const huffman_table *dc, const huffman_table *ac, int *prediction,
                               int quantizer, uint8_t *sample) {
    int difference;
    unsigned total = read_dc(reader, dc, &difference);
    if (total == 0) {
        return 0;
    }
    reader_skip(reader, total);
    *prediction = (int)((unsigned)*prediction + (unsigned)difference);  // wrapping, never undefined
    int dequantized = (int)(int16_t)*prediction * quantizer;
    *sample = idct_range_limit((dequantized + 4) >> 3);
    return skip_ac(reader, ac);
}

// osprey_jpeg_unstuff with READ_PADDING zeros after the data: its length, and *marker the marker's position after it,
// or SIZE_MAX when the file ends first.
static size_t unstuff(const uint8_t *data, size_t size, size_t start, uint8_t *out, size_t *marker) {
    size_t length = osprey_jpeg_unstuff(data, size, start, out, marker);
    if (length != SIZE_MAX) {
        memset(out + length, 0, READ_PADDING);
    }
    return length;
}

typedef struct {
    int id, h, v, table;
} frame_component;

typedef struct {
    const huffman_table *dc, *ac;
    int blocks;  // in an MCU
    int dcOnly;
    // Making the DC image: where the component's samples go, its blocks across and down in an MCU, its quantizer.
    uint8_t *samples;
    uint32_t samplesPerRow;
    int h, v;
    int quantizer;
} scan_component;

// The scan at `start` (its header's end) rewritten into `writer`, or, without one, read into its components'
// `samples`: returns the position of the marker after it, or 0 when it does not read cleanly.
static size_t rewrite_scan(const uint8_t *data, size_t size, size_t start, scan_component *scan, int count,
                           uint64_t mcus, uint64_t mcusAcross, uint32_t restartInterval, const int32_t *cancelled,
                           uint8_t *segment, bit_writer *writer) {
    size_t position = start;
    uint64_t done = 0, mcuX = mcusAcross - 1, mcuY = UINT64_MAX;  // one before the first
    unsigned untilCancelCheck = 0;
    for (unsigned restarts = 0; done < mcus; restarts++) {
        size_t marker;
        size_t length = unstuff(data, size, position, segment, &marker);
        if (length == SIZE_MAX) {
            return 0;
        }
        uint64_t interval = restartInterval > 0 && mcus - done > restartInterval ? restartInterval : mcus - done;
        bit_reader reader = {.data = segment};
        int predictions[3] = {0, 0, 0};  // the DC predictions start over after a restart marker
        for (uint64_t mcu = done; mcu < done + interval; mcu++) {
            if (++mcuX == mcusAcross) {  // the MCU's place in the image, for the DC image's samples
                mcuX = 0;
                mcuY++;
            }
            // An MCU writes at most 10 blocks of 64 symbols of at most 31 bits each, every byte stuffed.
            if (writer != NULL && !writer_reserve(writer, 10 * 64 * 4 * 2 + 16)) {
                return 0;
            }
            if (untilCancelCheck-- == 0) {
                if (cancelled != NULL && osprey_cancel_get(cancelled)) {
                    return 0;
                }
                untilCancelCheck = MCUS_PER_CANCEL_CHECK;
            }
            for (int c = 0; c < count; c++) {
                for (int b = 0; b < scan[c].blocks; b++) {
                    int read;
                    if (writer != NULL) {
                        read = copy_block(&reader, writer, scan[c].dc, scan[c].ac, scan[c].dcOnly);
                    } else {
                        uint64_t x = mcuX * (uint64_t)scan[c].h + (uint64_t)(b % scan[c].h);
                        uint64_t y = mcuY * (uint64_t)scan[c].v + (uint64_t)(b / scan[c].h);
                        read = sample_block(&reader, scan[c].dc, scan[c].ac, &predictions[c], scan[c].quantizer,
                                            &scan[c].samples[y * scan[c].samplesPerRow + x]);
                    }
                    if (!read || reader_consumed(&reader) > (uint64_t)length * 8) {
                        return 0;  // a code the tables lack, or past the data: damaged or truncated
                    }
                }
            }
        }
        // Nothing but the last byte's padding may be left before the marker (libjpeg warns of extra bytes; the copy
        // would drop them).
        if ((uint64_t)length * 8 - reader_consumed(&reader) >= 8 || (writer != NULL && !writer_reserve(writer, 2))) {
            return 0;
        }
        if (writer != NULL) {
            writer_flush(writer);
        }
        done += interval;
        if (done == mcus) {
            return marker;
        }
        // A restart marker, numbered as libjpeg expects it.
        if (data[marker + 1] != 0xD0 + restarts % 8) {
            return 0;
        }
        if (writer != NULL) {
            writer->out[writer->length++] = 0xFF;
            writer->out[writer->length++] = data[marker + 1];
        }
        position = marker + 2;
    }
    return 0;
}

// Walks the file: with `writer`, writes the copy in which the components marked in `dcOnly` keep their DC
// coefficients alone; without one, reads every component's DC samples into `image` (every component is then scaled by
// a 1×1 IDCT). 1 when the file read cleanly to EOI.
static int walk(const uint8_t *data, size_t size, const uint8_t *dcOnly, const int32_t *cancelled, bit_writer *writer,
                osprey_jpeg_dc_image *image) {
    if (size < 4 || data[0] != 0xFF || data[1] != 0xD8) {
        return 0;
    }
    int ok = 0;
    huffman_spec *specs = calloc(8, sizeof(huffman_spec));  // DC 0–3, AC 4–7
    huffman_table *tables = malloc(8 * sizeof(huffman_table));
    uint8_t *segment = malloc(size + READ_PADDING);
    if (specs == NULL || tables == NULL || segment == NULL) {
        goto done;
    }
    frame_component frame[3];
    uint8_t built[8] = {0};
    int quantizers[4] = {0}, quantizerDefined[4] = {0};  // the first value of each quantization table
    int frameComponents = 0, hMax = 1, vMax = 1, scanned = 0;
    uint32_t width = 0, height = 0, restartInterval = 0;
    if (writer != NULL) {
        writer->out[writer->length++] = 0xFF;
        writer->out[writer->length++] = 0xD8;
    }
    size_t position = 2;
    while (position + 1 < size) {
        if (data[position] != 0xFF) {
            goto done;
        }
        uint8_t marker = data[position + 1];
        if (marker == 0xFF) {  // fill byte
            position++;
            continue;
        }
        if (marker == 0xD9) {  // EOI
            if (!scanned || (writer != NULL && !writer_reserve(writer, 2))) {
                goto done;
            }
            if (writer != NULL) {
                writer->out[writer->length++] = 0xFF;
                writer->out[writer->length++] = 0xD9;
            }
            ok = 1;
            goto done;
        }
        // Segments this walk knows: APPn, COM, DQT, DHT, DRI, a sequential Huffman frame and its one scan. Any other
        // (another frame type, a marker without a length, bytes libjpeg would skip with a warning) leaves the file as
        // it is.
        int known = (marker >= 0xE0 && marker <= 0xEF) || marker == 0xFE || marker == 0xDB || marker == 0xC4
                    || marker == 0xDD || marker == 0xC0 || marker == 0xC1 || marker == 0xDA;
        if (!known || position + 4 > size) {
            goto done;
        }
        size_t length = (size_t)data[position + 2] << 8 | data[position + 3];
        size_t end = position + 2 + length;
        if (length < 2 || end > size) {
            goto done;
        }
        const uint8_t *p = data + position + 4;
        size_t n = length - 2;
        if (writer != NULL) {
            if (!writer_reserve(writer, end - position)) {
                goto done;
            }
            memcpy(writer->out + writer->length, data + position, end - position);
            writer->length += end - position;
        }
        if (marker == 0xC0 || marker == 0xC1) {  // baseline or extended sequential, Huffman-coded
            if (frameComponents > 0 || n < 6 || p[0] != 8) {
                goto done;
            }
            height = (uint32_t)p[1] << 8 | p[2];
            width = (uint32_t)p[3] << 8 | p[4];
            frameComponents = p[5];
            if ((frameComponents != 1 && frameComponents != 3) || n < 6 + 3 * (size_t)frameComponents || width == 0
                || height == 0) {
                goto done;
            }
            for (int c = 0; c < frameComponents; c++) {
                frame[c] = (frame_component){
                    .id = p[6 + 3 * c], .h = p[7 + 3 * c] >> 4, .v = p[7 + 3 * c] & 15, .table = p[8 + 3 * c]};
                if (frame[c].h < 1 || frame[c].h > 4 || frame[c].v < 1 || frame[c].v > 4 || frame[c].table > 3) {
                    goto done;
                }
                hMax = frame[c].h > hMax ? frame[c].h : hMax;
                vMax = frame[c].v > vMax ? frame[c].v : vMax;
            }
        } else if (marker == 0xDB) {  // DQT: one or more tables, of 8- or 16-bit values
            for (size_t at = 0; at < n;) {
                int precision = p[at] >> 4, id = p[at] & 15;
                size_t tableLength = 1 + 64 * (size_t)(precision + 1);
                if (precision > 1 || id > 3 || at + tableLength > n) {
                    goto done;
                }
                quantizers[id] = precision == 0 ? p[at + 1] : (int)(int16_t)(p[at + 1] << 8 | p[at + 2]);
                quantizerDefined[id] = 1;
                at += tableLength;
            }
        } else if (marker == 0xC4) {  // DHT: one or more tables
            for (size_t at = 0; at < n;) {
                if (at + 17 > n || p[at] >> 4 > 1 || (p[at] & 15) > 3) {
                    goto done;
                }
                huffman_spec *spec = &specs[(p[at] >> 4) * 4 + (p[at] & 15)];
                size_t count = 0;
                for (int l = 0; l < 16; l++) {
                    count += p[at + 1 + l];
                }
                if (count > 256 || at + 17 + count > n) {
                    goto done;
                }
                memcpy(spec->counts, p + at + 1, 16);
                memset(spec->symbols, 0, sizeof(spec->symbols));
                memcpy(spec->symbols, p + at + 17, count);
                spec->defined = 1;
                at += 17 + count;
            }
        } else if (marker == 0xDD) {  // DRI
            if (n < 2) {
                goto done;
            }
            restartInterval = (uint32_t)p[0] << 8 | p[1];
        } else if (marker == 0xDA) {  // SOS: the one scan, every component in it
            int count = n > 0 ? p[0] : 0;
            if (frameComponents == 0 || scanned || count != frameComponents || n < 1 + 2 * (size_t)count + 3) {
                goto done;
            }
            const uint8_t *spectral = p + 1 + 2 * count;
            if (spectral[0] != 0 || spectral[1] != 63 || spectral[2] != 0) {
                goto done;
            }
            uint64_t mcuWidth = count == 1 ? 8 : 8 * (uint64_t)hMax, mcuHeight = count == 1 ? 8 : 8 * (uint64_t)vMax;
            uint64_t mcusAcross = (width + mcuWidth - 1) / mcuWidth, mcusDown = (height + mcuHeight - 1) / mcuHeight;
            scan_component scan[3];
            int blocksPerMCU = 0;
            for (int c = 0; c < count; c++) {
                int id = p[1 + 2 * c], dcIndex = p[2 + 2 * c] >> 4, acIndex = 4 + (p[2 + 2 * c] & 15);
                const frame_component *component = NULL;
                for (int f = 0; f < frameComponents; f++) {
                    component = frame[f].id == id ? &frame[f] : component;
                }
                if (component == NULL || dcIndex > 3 || acIndex > 7) {
                    goto done;
                }
                int used[2] = {dcIndex, acIndex};
                for (int u = 0; u < 2; u++) {
                    int t = used[u];
                    if (!built[t] && (!specs[t].defined || !huffman_build(&tables[t], &specs[t], t >= 4))) {
                        goto done;
                    }
                    built[t] = 1;
                }
                // A scan of one component has one block an MCU, whatever its sampling factors.
                int h = count == 1 ? 1 : component->h, v = count == 1 ? 1 : component->v;
                scan[c] = (scan_component){.dc = &tables[dcIndex], .ac = &tables[acIndex], .blocks = h * v,
                                           .dcOnly = writer != NULL ? dcOnly[id & 0xFF] : 1, .h = h, .v = v};
                if (writer != NULL && scan[c].dcOnly && scan[c].ac->endLength == 0) {
                    goto done;  // no code to end a block with
                }
                if (image != NULL) {
                    // libjpeg upsamples at 1/8 by repeating samples, which needs whole ratios (it refuses others).
                    if (!quantizerDefined[component->table] || hMax % component->h != 0
                        || vMax % component->v != 0) {
                        goto done;
                    }
                    scan[c].quantizer = quantizers[component->table];
                    scan[c].samplesPerRow = (uint32_t)(mcusAcross * (uint64_t)h);
                    scan[c].samples = malloc((size_t)(mcusAcross * h) * (size_t)(mcusDown * v));
                    image->samples[c] = scan[c].samples;
                    image->samplesPerRow[c] = scan[c].samplesPerRow;
                    image->h[c] = (uint32_t)component->h;
                    image->v[c] = (uint32_t)component->v;
                    if (scan[c].samples == NULL) {
                        goto done;
                    }
                }
                blocksPerMCU += scan[c].blocks;
            }
            if (blocksPerMCU > 10) {
                goto done;
            }
            if (image != NULL) {
                image->components = count;
                image->maxH = (uint32_t)hMax;
                image->maxV = (uint32_t)vMax;
            }
            end = rewrite_scan(data, size, end, scan, count, mcusAcross * mcusDown, mcusAcross, restartInterval,
                               cancelled, segment, writer);
            if (end == 0) {
                goto done;
            }
            scanned = 1;
        }
        position = end;
    }
done:
    free(specs);
    free(tables);
    free(segment);
    return ok;
}

size_t osprey_jpeg_baseline_without_ac(const uint8_t *data, size_t size, const uint8_t dcOnly[256],
                                       const int32_t *cancelled, uint8_t **copy) {
    *copy = NULL;
    bit_writer writer = {.capacity = size / 4 + 65536};
    writer.out = malloc(writer.capacity);
    if (writer.out == NULL || !walk(data, size, dcOnly, cancelled, &writer, NULL)) {
        free(writer.out);
        return 0;
    }
    *copy = writer.out;
    return writer.length;
}

osprey_jpeg_dc_image *osprey_jpeg_baseline_dc_image(const uint8_t *data, size_t size, const int32_t *cancelled) {
    osprey_jpeg_dc_image *image = calloc(1, sizeof(osprey_jpeg_dc_image));
    if (image != NULL && !walk(data, size, NULL, cancelled, NULL, image)) {
        osprey_jpeg_dc_image_release(image);
        return NULL;
    }
    return image;
}

void osprey_jpeg_dc_image_release(osprey_jpeg_dc_image *image) {
    if (image != NULL) {
        for (int c = 0; c < 3; c++) {
            free(image->samples[c]);
        }
        free(image);
    }
}

int osprey_jpeg_dc_image_rows(const osprey_jpeg_dc_image *image, uint8_t *pixels, size_t bytesPerRow, uint32_t width,
                              uint32_t height) {
    // Each sample repeated over the output pixels it covers, as libjpeg upsamples at 1/8: the sample of each column.
    uint32_t *columns = malloc((size_t)width * 3 * sizeof(uint32_t));
    if (columns == NULL) {
        return 0;
    }
    for (int c = 0; c < image->components; c++) {
        uint32_t ratio = image->maxH / image->h[c];
        for (uint32_t x = 0; x < width; x++) {
            columns[(size_t)c * width + x] = x / ratio;
        }
    }
    // libjpeg-turbo's YCbCr to RGB tables (jdcolor.c), in 16-bit fixed point: its SIMD conversion gives the same.
    int crToRed[256], cbToBlue[256], crToGreen[256], cbToGreen[256];
    for (int i = 0, x = -128; i < 256; i++, x++) {
        crToRed[i] = (91881 * x + 32768) >> 16;    // 1.40200
        cbToBlue[i] = (116130 * x + 32768) >> 16;  // 1.77200
        crToGreen[i] = -46802 * x;                 // -0.71414
        cbToGreen[i] = -22554 * x + 32768;         // -0.34414, and the rounding
    }
    for (uint32_t y = 0; y < height; y++) {
        uint8_t *out = pixels + (size_t)y * bytesPerRow;
        const uint8_t *rows[3];
        for (int c = 0; c < image->components; c++) {
            rows[c] = image->samples[c] + (size_t)(y / (image->maxV / image->v[c])) * image->samplesPerRow[c];
        }
        if (image->components == 1) {
            memcpy(out, rows[0], width);
            continue;
        }
        const uint32_t *lumaColumns = columns, *cbColumns = columns + width, *crColumns = columns + 2 * (size_t)width;
        for (uint32_t x = 0; x < width; x++) {
            int luma = rows[0][lumaColumns[x]], cb = rows[1][cbColumns[x]], cr = rows[2][crColumns[x]];
            int red = luma + crToRed[cr], green = luma + ((cbToGreen[cb] + crToGreen[cr]) >> 16),
                blue = luma + cbToBlue[cb];
            out[3 * x] = (uint8_t)(red < 0 ? 0 : red > 255 ? 255 : red);
            out[3 * x + 1] = (uint8_t)(green < 0 ? 0 : green > 255 ? 255 : green);
            out[3 * x + 2] = (uint8_t)(blue < 0 ? 0 : blue > 255 ? 255 : blue);
        }
    }
    free(columns);
    return 1;
}
