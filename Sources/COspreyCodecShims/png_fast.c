#include "png_fast.h"

#include "png_common.h"
#include "png_unfilter.h"

#include <stdlib.h>
#include <string.h>

// Why a second PNG path: libpng inflates through zlib's streaming decoder and, as Debian builds it, unfilters in
// scalar code; the two were 88% of decoding a photo. libdeflate inflates the whole stream in one call, 2-3x faster,
// and our unfiltering does Paeth with SSE2. libpng stays the reference: anything unusual goes to it (png_fast.h).

/// libpng's default user limit on either dimension (PNG_USER_WIDTH_MAX / PNG_USER_HEIGHT_MAX).
#define OSPREY_PNG_USER_DIMENSION_MAX 1000000u

static uint32_t osprey_be32(const uint8_t *bytes) {
    return (uint32_t)bytes[0] << 24 | (uint32_t)bytes[1] << 16 | (uint32_t)bytes[2] << 8 | (uint32_t)bytes[3];
}

static int osprey_is_letter(uint8_t byte) {
    return (byte >= 'A' && byte <= 'Z') || (byte >= 'a' && byte <= 'z');
}

/// What the chunk walk found: the header fields, the palette and transparency, where the IDATs are, and eXIf.
typedef struct {
    uint32_t width;
    uint32_t height;
    uint8_t colorType;
    /// Samples per pixel in the file: 1 gray or palette index, 2 gray+alpha, 3 RGB, 4 RGBA.
    unsigned channels;
    /// Palette entries as RGBA (alpha from tRNS, 255 past its end); entries past the palette stay black, as libpng's
    /// 256-entry palette leaves them.
    uint8_t palette[256][4];
    unsigned paletteCount;
    int hasTransparency;
    /// The tRNS colour key of gray or RGB images (each sample fits 8 bits: the walk refuses others).
    uint8_t key[3];
    /// Offsets of the first and one past the last IDAT chunk (whole chunks), their count and payload total.
    size_t firstIDAT;
    size_t endIDAT;
    unsigned idatCount;
    uint64_t idatBytes;
    const uint8_t *exif;
    uint32_t exifLength;
} osprey_png_layout;

/// libpng's ceiling on one IDAT chunk's length (png_check_chunk_length): the image's worst-case zlib size, or the
/// chunk allocation limit if that is larger. Longer chunks are an error to libpng.
static uint64_t osprey_png_idat_limit(const osprey_png_layout *layout) {
    uint64_t rowFactor = (uint64_t)layout->width * layout->channels + 1;
    uint64_t limit = 0x7fffffffu;
    if (layout->height <= 0xffffffffu / rowFactor) {
        limit = (uint64_t)layout->height * rowFactor;
    }
    uint64_t factor = rowFactor > 32566 ? 32566 : rowFactor;
    limit += 6 + 5 * (limit / factor + 1);
    if (limit > 0x7fffffffu) {
        limit = 0x7fffffffu;
    }
    return limit > OSPREY_PNG_CHUNK_MALLOC_MAX ? limit : OSPREY_PNG_CHUNK_MALLOC_MAX;
}

static int osprey_png_read_ihdr(const uint8_t *body, uint32_t length, const osprey_png_decode_request *request,
                                osprey_png_layout *layout) {
    static const unsigned channelsOf[7] = {1, 0, 3, 1, 2, 0, 4};
    if (length != 13) {
        return 0;
    }
    layout->width = osprey_be32(body);
    layout->height = osprey_be32(body + 4);
    layout->colorType = body[9];
    // 8 bits per sample, compression and filter method 0, no interlacing.
    if (body[8] != 8 || layout->colorType > 6 || body[10] != 0 || body[11] != 0 || body[12] != 0) {
        return 0;
    }
    layout->channels = channelsOf[layout->colorType];
    if (layout->channels == 0 || layout->width == 0 || layout->height == 0
        || layout->width > OSPREY_PNG_USER_DIMENSION_MAX || layout->height > OSPREY_PNG_USER_DIMENSION_MAX) {
        return 0;
    }
    // Over the pixel limit: libpng's path reports it.
    return request->maxPixels == 0 || (uint64_t)layout->width * layout->height <= request->maxPixels;
}

static int osprey_png_read_plte(const uint8_t *body, uint32_t length, osprey_png_layout *layout) {
    // A palette in a gray image is an error to libpng; in RGB(A) it is a suggestion, ignored.
    if (layout->colorType == 0 || layout->colorType == 4 || length == 0 || length % 3 != 0 || length > 768) {
        return 0;
    }
    layout->paletteCount = length / 3;
    for (unsigned entry = 0; entry < layout->paletteCount; entry++) {
        memcpy(layout->palette[entry], body + 3 * entry, 3);
    }
    return 1;
}

static int osprey_png_read_trns(const uint8_t *body, uint32_t length, int sawPLTE, osprey_png_layout *layout) {
    switch (layout->colorType) {
    case 0:
        if (length != 2 || body[0] != 0) {
            return 0;
        }
        layout->key[0] = body[1];
        break;
    case 2:
        if (length != 6 || body[0] != 0 || body[2] != 0 || body[4] != 0) {
            return 0;
        }
        layout->key[0] = body[1];
        layout->key[1] = body[3];
        layout->key[2] = body[5];
        break;
    case 3:
        if (!sawPLTE || length == 0 || length > layout->paletteCount) {
            return 0;
        }
        for (uint32_t entry = 0; entry < length; entry++) {
            layout->palette[entry][3] = body[entry];
        }
        break;
    default:
        return 0;  // Gray+alpha and RGBA images cannot carry tRNS: libpng ignores it with a complaint.
    }
    layout->hasTransparency = 1;
    return 1;
}

static int osprey_png_read_exif(const uint8_t *body, uint32_t length, osprey_png_layout *layout) {
    // libpng keeps the first well-formed eXIf ("MM" or "II"); any other is a complaint, left to it.
    if (layout->exif != NULL || length < 2 || body[0] != body[1] || (body[0] != 'M' && body[0] != 'I')) {
        return 0;
    }
    layout->exif = body;
    layout->exifLength = length;
    return 1;
}

/// Walks every chunk up to IEND, checking each CRC, and fills `layout`. Returns 0 at the first thing the fast path
/// leaves to libpng.
static int osprey_png_walk(const uint8_t *data, size_t size, const osprey_png_decode_request *request,
                           osprey_png_layout *layout) {
    static const uint8_t signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    if (size < 8 || memcmp(data, signature, 8) != 0) {
        return 0;
    }
    int sawPLTE = 0, sawTRNS = 0;
    // 0 before the IDATs, 1 among them, 2 after them.
    int idatState = 0;
    uint64_t idatLimit = 0;
    size_t offset = 8;
    for (unsigned index = 0;; index++) {
        if (size - offset < 12) {
            return 0;  // No IEND: libpng decides what a missing end means.
        }
        uint32_t length = osprey_be32(data + offset);
        const uint8_t *type = data + offset + 4;
        const uint8_t *body = type + 4;
        if (length > 0x7fffffffu || length > size - offset - 12) {
            return 0;
        }
        if (!osprey_is_letter(type[0]) || !osprey_is_letter(type[1]) || !osprey_is_letter(type[2])
            || !osprey_is_letter(type[3])) {
            return 0;
        }
        if ((uint32_t)libdeflate_crc32(0, type, (size_t)length + 4) != osprey_be32(body + length)) {
            return 0;
        }
        int isIHDR = memcmp(type, "IHDR", 4) == 0;
        if (isIHDR != (index == 0)) {
            return 0;
        }
        int isIDAT = memcmp(type, "IDAT", 4) == 0;
        if (!isIDAT && length > OSPREY_PNG_CHUNK_MALLOC_MAX) {
            return 0;  // libpng refuses any other chunk over its allocation limit.
        }
        if (isIDAT) {
            if (idatState == 2 || length > idatLimit) {
                return 0;
            }
            if (idatState == 0) {
                layout->firstIDAT = offset;
            }
            idatState = 1;
            layout->idatCount++;
            layout->idatBytes += length;
            layout->endIDAT = offset + 12 + length;
        } else if (idatState == 1) {
            idatState = 2;
        }

        int ok = 1;
        if (isIHDR) {
            ok = osprey_png_read_ihdr(body, length, request, layout);
            idatLimit = osprey_png_idat_limit(layout);
        } else if (memcmp(type, "IEND", 4) == 0) {
            return idatState == 2 && (layout->colorType != 3 || sawPLTE);
        } else if (memcmp(type, "PLTE", 4) == 0) {
            ok = idatState == 0 && !sawPLTE && !sawTRNS && osprey_png_read_plte(body, length, layout);
            sawPLTE = 1;
        } else if (memcmp(type, "tRNS", 4) == 0) {
            ok = idatState == 0 && !sawTRNS && osprey_png_read_trns(body, length, sawPLTE, layout);
            sawTRNS = 1;
        } else if (memcmp(type, "eXIf", 4) == 0) {
            ok = osprey_png_read_exif(body, length, layout);
        } else if (!isIDAT) {
            // An unknown critical chunk (uppercase first letter) is an error to libpng; ancillary ones are skipped.
            ok = (type[0] & 0x20) != 0;
        }
        if (!ok) {
            return 0;
        }
        offset += (size_t)length + 12;
    }
}

/// Inflates the IDAT payload into exactly `size` bytes at `out`. Returns 0 unless the zlib stream fills it exactly,
/// ends exactly at the end of the payload and passes its Adler-32 check.
static int osprey_png_inflate(const uint8_t *data, const osprey_png_layout *layout, uint8_t *out, size_t size) {
    const uint8_t *stream = data + layout->firstIDAT + 8;
    uint8_t *joined = NULL;
    if (layout->idatCount > 1) {
        joined = malloc(layout->idatBytes > 0 ? (size_t)layout->idatBytes : 1);
        if (joined == NULL) {
            return 0;
        }
        size_t written = 0;
        for (size_t offset = layout->firstIDAT; offset < layout->endIDAT;) {
            uint32_t length = osprey_be32(data + offset);
            memcpy(joined + written, data + offset + 8, length);
            written += length;
            offset += (size_t)length + 12;
        }
        stream = joined;
    }
    int ok = 0;
    // zlib (as libpng runs it) refuses distances beyond the window the header declares; libdeflate always allows
    // 32 KiB. A smaller window only matters when the output is larger than it.
    if (layout->idatBytes >= 2) {
        size_t window = (size_t)1 << ((stream[0] >> 4) + 8);
        if (window >= 32768 || size <= window) {
            struct libdeflate_decompressor *decompressor = libdeflate_alloc_decompressor();
            if (decompressor != NULL) {
                size_t consumed = 0;
                enum libdeflate_result status = libdeflate_zlib_decompress_ex(
                    decompressor, stream, (size_t)layout->idatBytes, out, size, &consumed, NULL);
                ok = status == LIBDEFLATE_SUCCESS && consumed == layout->idatBytes;
                libdeflate_free_decompressor(decompressor);
            }
        }
    }
    free(joined);
    return ok;
}

/// Expands one reconstructed row of palette indices or colour-keyed samples to the output layout.
static void osprey_png_expand_row(const osprey_png_layout *layout, const uint8_t *in, uint8_t *out) {
    uint32_t width = layout->width;
    if (layout->colorType == 3) {
        unsigned components = layout->hasTransparency ? 4 : 3;
        for (uint32_t x = 0; x < width; x++) {
            memcpy(out + (size_t)x * components, layout->palette[in[x]], components);
        }
    } else if (layout->colorType == 0) {
        for (uint32_t x = 0; x < width; x++) {
            out[2 * x] = in[x];
            out[2 * x + 1] = in[x] == layout->key[0] ? 0 : 255;
        }
    } else {
        for (uint32_t x = 0; x < width; x++) {
            const uint8_t *rgb = in + (size_t)x * 3;
            memcpy(out + (size_t)x * 4, rgb, 3);
            out[(size_t)x * 4 + 3] = (rgb[0] == layout->key[0] && rgb[1] == layout->key[1] && rgb[2] == layout->key[2])
                                         ? 0
                                         : 255;
        }
    }
}

/// Reverses every row's filter. Without `expanded`, rows are compacted in place to `rowBytes` apart (dropping the
/// filter bytes); with it, each reconstructed row is expanded into `expanded` at `expandedStride`.
static int osprey_png_reconstruct(const osprey_png_layout *layout, uint8_t *filtered, size_t rowBytes,
                                  uint8_t *expanded, size_t expandedStride) {
    uint8_t *zeros = calloc(rowBytes, 1);
    if (zeros == NULL) {
        return 0;
    }
    const uint8_t *previous = zeros;
    for (uint32_t y = 0; y < layout->height; y++) {
        const uint8_t *in = filtered + (size_t)y * (rowBytes + 1);
        uint8_t *out = expanded != NULL ? (uint8_t *)in + 1 : filtered + (size_t)y * rowBytes;
        if (osprey_png_unfilter_row(in[0], in + 1, previous, out, rowBytes, layout->channels) != 0) {
            free(zeros);
            return 0;
        }
        if (expanded != NULL) {
            osprey_png_expand_row(layout, out, expanded + (size_t)y * expandedStride);
        }
        previous = out;
    }
    free(zeros);
    return 1;
}

int osprey_png_decode_fast(const uint8_t *data, size_t size, const osprey_png_decode_request *request,
                           osprey_png_decode_result *result) {
    // Without libdeflate, libpng decodes every file (with zlib, its own dependency).
    if (osprey_deflate_functions_load(NULL) == NULL) {
        return 0;
    }
    osprey_png_layout *layout = calloc(1, sizeof(osprey_png_layout));
    if (layout == NULL) {
        return 0;
    }
    for (unsigned entry = 0; entry < 256; entry++) {
        layout->palette[entry][3] = 255;
    }
    if (!osprey_png_walk(data, size, request, layout)) {
        free(layout);
        return 0;
    }
    size_t rowBytes = (size_t)layout->width * layout->channels;
    size_t filteredSize = (rowBytes + 1) * layout->height;
    unsigned components = layout->channels;
    if (layout->colorType == 3) {
        components = layout->hasTransparency ? 4 : 3;
    } else if (layout->hasTransparency) {
        components += 1;
    }
    int expands = layout->colorType == 3 || layout->hasTransparency;
    size_t outputSize = (size_t)layout->width * components * layout->height;

    // Without expansion the output is the inflated buffer itself, compacted in place; with it, a second buffer.
    uint8_t *filtered = osprey_pixels_allocate(filteredSize);
    uint8_t *pixels = expands ? osprey_pixels_allocate(outputSize) : NULL;
    int ok = filtered != NULL && (!expands || pixels != NULL) && osprey_png_inflate(data, layout, filtered, filteredSize)
             && osprey_png_reconstruct(layout, filtered, rowBytes, pixels, (size_t)layout->width * components);
    if (ok && !expands) {
        pixels = osprey_pixels_shrink(filtered, filteredSize, outputSize);
        ok = pixels != NULL;
        filtered = ok ? NULL : filtered;
    }
    osprey_pixels_free(filtered, filteredSize);
    uint8_t *exif = NULL;
    if (ok && layout->exif != NULL) {
        exif = malloc(layout->exifLength);
        ok = exif != NULL;
        if (ok) {
            memcpy(exif, layout->exif, layout->exifLength);
        }
    }
    if (!ok) {
        osprey_pixels_free(pixels, outputSize);
        free(layout);
        return 0;
    }
    result->pixels = pixels;
    result->width = layout->width;
    result->height = layout->height;
    result->components = components;
    result->bytesPerRow = (uint64_t)layout->width * components;
    result->exif = exif;
    result->exifLength = exif != NULL ? layout->exifLength : 0;
    result->truncated = 0;
    result->fastPath = 1;
    free(layout);
    return 1;
}
