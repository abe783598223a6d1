#include "COspreyCodecShims.h"

#include "png_common.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// A growing malloc'd buffer that libpng writes into; starts with the message, as osprey_png_error expects.
typedef struct {
    char *message;
    uint8_t *data;
    uint64_t size;
    uint64_t capacity;
} osprey_png_writer;

static void osprey_png_write(png_structp png, png_bytep bytes, size_t length) {
    osprey_png_writer *writer = (osprey_png_writer *)png_get_io_ptr(png);
    if (writer->size + length > writer->capacity) {
        uint64_t capacity = writer->capacity * 2 > writer->size + length ? writer->capacity * 2 : writer->size + length;
        uint8_t *grown = realloc(writer->data, capacity);
        if (grown == NULL) {
            png_error(png, "out of memory for the encoded data");
        }
        writer->data = grown;
        writer->capacity = capacity;
    }
    memcpy(writer->data + writer->size, bytes, length);
    writer->size += length;
}

static void osprey_png_flush(png_structp png) {
    (void)png;
}

/// What `osprey_png_write_image` writes: the IHDR's colour type and bit depth, the rows (one byte per pixel for a
/// palette of fewer than 256 colours, which libpng packs), and the palette with its transparency, if any.
typedef struct {
    int colorType;
    int bitDepth;
    const uint8_t *pixels;
    uint64_t bytesPerRow;
    const png_color *palette;
    int paletteSize;
    const png_byte *transparency;
    int transparencySize;
} osprey_png_image;

/// Writes `image` as a PNG of `width`×`height` at zlib `compressionLevel` into `*output` (malloc'd, `*outputSize`
/// bytes); OSPREY_ERROR with `message` set when libpng fails. Palettes come here only without libdeflate
/// (`osprey_png_write_palette`), at 9, as pngquant writes them: zlib's best on a quarter of the data or less (6 made
/// a 640×360 photo's palette 4% larger, a 6000×3300 one's 13%).
static int osprey_png_write_image(const osprey_png_image *image, uint32_t width, uint32_t height,
                                  int32_t compressionLevel, uint8_t **output, uint64_t *outputSize, char *message) {
    osprey_png_writer writer = {message, NULL, 0, 0};
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &writer, osprey_png_error, osprey_png_warning);
    png_infop info = png != NULL ? png_create_info_struct(png) : NULL;
    if (info == NULL) {
        png_destroy_write_struct(&png, NULL);
        snprintf(message, OSPREY_MESSAGE_CAPACITY, "cannot create a PNG writer");
        return OSPREY_ERROR;
    }
    if (setjmp(png_jmpbuf(png))) {
        free(writer.data);
        png_destroy_write_struct(&png, &info);
        return OSPREY_ERROR;
    }
    png_set_write_fn(png, &writer, osprey_png_write, osprey_png_flush);
    png_set_compression_level(png, compressionLevel < 0 ? 6 : (compressionLevel > 9 ? 9 : compressionLevel));
    png_set_IHDR(png, info, width, height, image->bitDepth, image->colorType, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    if (image->palette != NULL) {
        // As pngquant writes its palettes (its callers ask for level 9 too): no filter, which indices gain nothing
        // from, and a smaller zlib window.
        png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_VALUE_NONE);
        png_set_compression_mem_level(png, 5);
        png_set_PLTE(png, info, image->palette, image->paletteSize);
        if (image->transparencySize > 0) {
            png_set_tRNS(png, info, image->transparency, image->transparencySize, NULL);
        }
    }
    png_write_info(png, info);
    if (image->bitDepth < 8) {
        png_set_packing(png);
    }
    for (uint32_t y = 0; y < height; y++) {
        png_write_row(png, image->pixels + (uint64_t)y * image->bytesPerRow);
    }
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    *output = writer.data;
    *outputSize = writer.size;
    return OSPREY_OK;
}

// The libdeflate level of a palette's indices: on two corpus photos quantised to 256 colours at 1024 px, 1-2% fewer
// bytes than zlib at 9 (what libpng, and pngquant, write with) in a fifth of the time (15.6 against 87 ms), and
// within 1% of it over the palette benchmark's 28 pictures; 10 and up save 4% more for 4-5x as long.
#define OSPREY_PALETTE_DEFLATE_LEVEL 6

static uint8_t *osprey_put32(uint8_t *out, uint32_t value) {
    out[0] = (uint8_t)(value >> 24);
    out[1] = (uint8_t)(value >> 16);
    out[2] = (uint8_t)(value >> 8);
    out[3] = (uint8_t)value;
    return out + 4;
}

// Ends the chunk whose length field is at `chunk` and whose data is `length` bytes: its length and CRC written.
static uint8_t *osprey_finish_chunk(uint8_t *chunk, uint32_t length) {
    osprey_put32(chunk, length);
    return osprey_put32(chunk + 8 + length, (uint32_t)libdeflate_crc32(0, chunk + 4, (size_t)length + 4));
}

/// Writes the palette image `image` (8-bit indices, `bytesPerRow` apart) as a PNG: the chunks written here and the
/// indices, packed to its bit depth, unfiltered (indices gain nothing from filters), in one IDAT compressed by
/// libdeflate. Through libpng and zlib, as `osprey_png_write_image` does, when libdeflate cannot be opened.
static int osprey_png_write_palette(const osprey_png_image *image, uint32_t width, uint32_t height, uint8_t **output,
                                    uint64_t *outputSize, char *message) {
    int depth = image->bitDepth;
    size_t rowBytes = ((size_t)width * (size_t)depth + 7) / 8;
    size_t rawSize = (rowBytes + 1) * height;
    if (osprey_deflate_functions_load(NULL) == NULL || rawSize > ((size_t)1 << 30)) {
        return osprey_png_write_image(image, width, height, 9, output, outputSize, message);
    }
    uint8_t *raw = malloc(rawSize);
    struct libdeflate_compressor *compressor = libdeflate_alloc_compressor(OSPREY_PALETTE_DEFLATE_LEVEL);
    size_t bound = compressor != NULL ? libdeflate_zlib_compress_bound(compressor, rawSize) : 0;
    // Signature, IHDR, PLTE, tRNS, IDAT and IEND: 8 + 25 + (12 + 768) + (12 + 256) + (12 + bound) + 12 at most.
    uint8_t *png = raw != NULL && compressor != NULL ? malloc(1105 + bound) : NULL;
    if (png == NULL) {
        free(raw);
        if (compressor != NULL) libdeflate_free_compressor(compressor);
        snprintf(message, OSPREY_MESSAGE_CAPACITY, "out of memory for the PNG");
        return OSPREY_ERROR;
    }
    for (uint32_t y = 0; y < height; y++) {
        const uint8_t *indices = image->pixels + (uint64_t)y * image->bytesPerRow;
        uint8_t *row = raw + (size_t)y * (rowBytes + 1);
        row[0] = 0;  // Filter type None.
        if (depth == 8) {
            memcpy(row + 1, indices, width);
            continue;
        }
        // The first pixel in the most significant bits, as PNG packs samples.
        memset(row + 1, 0, rowBytes);
        int perByte = 8 / depth;
        for (uint32_t x = 0; x < width; x++) {
            row[1 + x / perByte] |= (uint8_t)(indices[x] << (8 - depth * (int)(x % perByte + 1)));
        }
    }
    static const uint8_t signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    uint8_t *out = png;
    memcpy(out, signature, 8);
    out += 8;
    uint8_t *chunk = out;
    memcpy(chunk + 4, "IHDR", 4);
    uint8_t *data = osprey_put32(osprey_put32(chunk + 8, width), height);
    data[0] = (uint8_t)depth;
    data[1] = 3;  // Palette.
    data[2] = data[3] = data[4] = 0;  // Deflate, adaptive filtering, no interlace.
    out = osprey_finish_chunk(chunk, 13);
    chunk = out;
    memcpy(chunk + 4, "PLTE", 4);
    for (int i = 0; i < image->paletteSize; i++) {
        chunk[8 + 3 * i] = image->palette[i].red;
        chunk[9 + 3 * i] = image->palette[i].green;
        chunk[10 + 3 * i] = image->palette[i].blue;
    }
    out = osprey_finish_chunk(chunk, (uint32_t)(3 * image->paletteSize));
    if (image->transparencySize > 0) {
        chunk = out;
        memcpy(chunk + 4, "tRNS", 4);
        memcpy(chunk + 8, image->transparency, (size_t)image->transparencySize);
        out = osprey_finish_chunk(chunk, (uint32_t)image->transparencySize);
    }
    chunk = out;
    memcpy(chunk + 4, "IDAT", 4);
    size_t compressed = libdeflate_zlib_compress(compressor, raw, rawSize, chunk + 8, bound);
    libdeflate_free_compressor(compressor);
    free(raw);
    if (compressed == 0) {
        free(png);
        snprintf(message, OSPREY_MESSAGE_CAPACITY, "libdeflate could not compress the indices");
        return OSPREY_ERROR;
    }
    out = osprey_finish_chunk(chunk, (uint32_t)compressed);
    chunk = out;
    memcpy(chunk + 4, "IEND", 4);
    out = osprey_finish_chunk(chunk, 0);
    *output = png;
    *outputSize = (uint64_t)(out - png);
    return OSPREY_OK;
}

/// The colours of RGB or RGBA `pixels` as an exact palette, when there are at most 256 of them: `colors`, `alphas` (the
/// transparent entries first, so that tRNS can stop early: `*transparent` of them) and one index per pixel in
/// `indices` (`width`×`height` bytes). 0 when there are more colours.
static int osprey_exact_palette(const uint8_t *pixels, uint32_t width, uint32_t height, uint32_t components,
                                uint64_t bytesPerRow, png_color colors[256], png_byte alphas[256], int *count,
                                int *transparent, uint8_t *indices) {
    // Open addressing over 1024 slots (a quarter full at most): the colour as RGBA in 32 bits, its entry + 1.
    uint32_t keys[1024];
    uint16_t entries[1024] = {0};
    uint32_t found[256];
    int colorCount = 0;
    for (uint32_t y = 0; y < height; y++) {
        const uint8_t *pixel = pixels + (uint64_t)y * bytesPerRow;
        uint8_t *index = indices + (uint64_t)y * width;
        for (uint32_t x = 0; x < width; x++, pixel += components) {
            uint32_t key = (uint32_t)pixel[0] << 24 | (uint32_t)pixel[1] << 16 | (uint32_t)pixel[2] << 8 |
                           (components == 4 ? pixel[3] : 255);
            uint32_t slot = (key * 2654435761u) >> 22;
            while (entries[slot] != 0 && keys[slot] != key) slot = (slot + 1) & 1023;
            if (entries[slot] == 0) {
                if (colorCount == 256) return 0;
                keys[slot] = key;
                found[colorCount] = key;
                entries[slot] = (uint16_t)++colorCount;
            }
            index[x] = (uint8_t)(entries[slot] - 1);
        }
    }
    // Transparent colours first: entry order as found, then remapped.
    uint8_t order[256];
    int next = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (int entry = 0; entry < colorCount; entry++) {
            int opaque = (found[entry] & 0xFF) == 255;
            if (opaque != pass) continue;
            uint32_t key = found[entry];
            colors[next] = (png_color){(png_byte)(key >> 24), (png_byte)(key >> 16), (png_byte)(key >> 8)};
            alphas[next] = (png_byte)key;
            order[entry] = (uint8_t)next++;
        }
        if (pass == 0) *transparent = next;
    }
    for (uint64_t pixel = 0; pixel < (uint64_t)width * height; pixel++) indices[pixel] = order[indices[pixel]];
    *count = colorCount;
    return 1;
}

/// The bits per index a palette of `count` entries needs.
static int osprey_palette_depth(int count) {
    return count <= 2 ? 1 : (count <= 4 ? 2 : (count <= 16 ? 4 : 8));
}

/// How many palette entries tRNS lists: the transparent ones (first in the palette), and at least one for RGBA
/// pixels, so that the file still reads back with an alpha channel even when every pixel was opaque.
static int osprey_transparency_size(int transparent, uint32_t components) {
    return transparent == 0 && components == 4 ? 1 : transparent;
}

/// Returned by osprey_png_encode_exact_palette for a picture of more than 256 colours.
#define OSPREY_NOT_APPLICABLE 1

/// A colour picture of at most 256 colours (a logo, a diagram, a screenshot) as the same pixels in a palette: a byte
/// or less per pixel instead of three or four. OSPREY_NOT_APPLICABLE when it has more colours (a photo stops the count
/// within its first rows); else as osprey_png_encode.
static int osprey_png_encode_exact_palette(const uint8_t *pixels, uint32_t width, uint32_t height,
                                           uint32_t components, uint64_t bytesPerRow, uint8_t **output,
                                           uint64_t *outputSize, char *message) {
    uint8_t *indices = malloc((size_t)width * height);
    png_color colors[256];
    png_byte alphas[256];
    int count = 0, transparent = 0, status = OSPREY_NOT_APPLICABLE;
    if (indices != NULL && osprey_exact_palette(pixels, width, height, components, bytesPerRow, colors, alphas, &count,
                                                &transparent, indices)) {
        osprey_png_image image = {PNG_COLOR_TYPE_PALETTE, osprey_palette_depth(count), indices, width, colors, count,
                                  alphas, osprey_transparency_size(transparent, components)};
        status = osprey_png_write_palette(&image, width, height, output, outputSize, message);
    }
    free(indices);
    return status;
}

int osprey_png_encode(const uint8_t *pixels, uint32_t width, uint32_t height, uint32_t components, uint64_t bytesPerRow,
                      int32_t compressionLevel, uint8_t **output, uint64_t *outputSize, char *message) {
    static const int colorTypes[] = {PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA, PNG_COLOR_TYPE_RGB,
                                     PNG_COLOR_TYPE_RGB_ALPHA};
    message[0] = '\0';
    *output = NULL;
    *outputSize = 0;
    OSPREY_OPEN(png, message);
    if (components < 1 || components > 4) {
        snprintf(message, OSPREY_MESSAGE_CAPACITY, "unsupported component count %u", components);
        return OSPREY_ERROR;
    }
    if (components >= 3) {
        int status = osprey_png_encode_exact_palette(pixels, width, height, components, bytesPerRow, output,
                                                     outputSize, message);
        if (status != OSPREY_NOT_APPLICABLE) return status;
    }
    osprey_png_image image = {colorTypes[components - 1], 8, pixels, bytesPerRow, NULL, 0, NULL, 0};
    return osprey_png_write_image(&image, width, height, compressionLevel, output, outputSize, message);
}

/// RGB or RGBA `pixels` as the contiguous RGBA libimagequant reads: the buffer itself when it already is, else a
/// malloc'd copy in `*copy` (RGB read as opaque). NULL when out of memory.
static const uint8_t *osprey_rgba_pixels(const uint8_t *pixels, uint32_t width, uint32_t height, uint32_t components,
                                         uint64_t bytesPerRow, uint8_t **copy) {
    *copy = NULL;
    if (components == 4 && bytesPerRow == (uint64_t)width * 4) {
        return pixels;
    }
    uint8_t *rgba = malloc((size_t)width * height * 4);
    if (rgba == NULL) {
        return NULL;
    }
    for (uint32_t y = 0; y < height; y++) {
        const uint8_t *source = pixels + (uint64_t)y * bytesPerRow;
        uint8_t *target = rgba + (uint64_t)y * width * 4;
        for (uint32_t x = 0; x < width; x++, source += components, target += 4) {
            target[0] = source[0];
            target[1] = source[1];
            target[2] = source[2];
            target[3] = components == 4 ? source[3] : 255;
        }
    }
    *copy = rgba;
    return rgba;
}

int osprey_png_encode_palette(const uint8_t *pixels, uint32_t width, uint32_t height, uint32_t components,
                              uint64_t bytesPerRow, int32_t quality, int32_t speed, uint8_t **output,
                              uint64_t *outputSize, char *message) {
    message[0] = '\0';
    *output = NULL;
    *outputSize = 0;
    OSPREY_OPEN(png, message);
    OSPREY_OPEN(imagequant, message);
    if (components != 3 && components != 4) {
        snprintf(message, OSPREY_MESSAGE_CAPACITY, "a palette is made from RGB or RGBA, not %u components", components);
        return OSPREY_ERROR;
    }
    if ((uint64_t)width * height > (uint64_t)INT32_MAX / 4) {
        snprintf(message, OSPREY_MESSAGE_CAPACITY, "%ux%u is too large for a palette", width, height);
        return OSPREY_ERROR;
    }
    uint8_t *copy = NULL;
    uint8_t *indices = malloc((size_t)width * height);
    const uint8_t *rgba = osprey_rgba_pixels(pixels, width, height, components, bytesPerRow, &copy);
    liq_attr *attributes = liq_attr_create();
    liq_image *input = NULL;
    liq_result *result = NULL;
    int status = OSPREY_ERROR;
    if (indices == NULL || rgba == NULL || attributes == NULL) {
        snprintf(message, OSPREY_MESSAGE_CAPACITY, "out of memory for the palette");
        goto done;
    }
    // As pngquant --quality 0-Q --speed S: any quality is accepted (none is refused as too low), Q the most aimed at.
    liq_set_quality(attributes, 0, quality < 0 ? 0 : (quality > 100 ? 100 : quality));
    liq_set_speed(attributes, speed < 1 ? 1 : (speed > 10 ? 10 : speed));
    input = liq_image_create_rgba(attributes, rgba, (int)width, (int)height, 0);
    liq_error error = input != NULL ? liq_image_quantize(input, attributes, &result) : LIQ_OUT_OF_MEMORY;
    if (error != LIQ_OK) {
        snprintf(message, OSPREY_MESSAGE_CAPACITY, "libimagequant could not make a palette (error %d)", (int)error);
        goto done;
    }
    liq_set_dithering_level(result, 1.0f);
    if (liq_write_remapped_image(result, input, indices, (size_t)width * height) != LIQ_OK) {
        snprintf(message, OSPREY_MESSAGE_CAPACITY, "libimagequant could not map the pixels to the palette");
        goto done;
    }
    // libimagequant orders the palette with its transparent entries first, so tRNS stops at the last of them.
    const liq_palette *palette = liq_get_palette(result);
    png_color colors[256];
    png_byte alphas[256];
    int transparent = 0;
    for (unsigned int index = 0; index < palette->count; index++) {
        colors[index] = (png_color){palette->entries[index].r, palette->entries[index].g, palette->entries[index].b};
        alphas[index] = palette->entries[index].a;
        if (alphas[index] < 255) transparent = (int)index + 1;
    }
    int count = (int)palette->count;
    osprey_png_image image = {PNG_COLOR_TYPE_PALETTE, osprey_palette_depth(count), indices, width, colors, count,
                              alphas, osprey_transparency_size(transparent, components)};
    status = osprey_png_write_palette(&image, width, height, output, outputSize, message);
done:
    if (result != NULL) liq_result_destroy(result);
    if (input != NULL) liq_image_destroy(input);
    if (attributes != NULL) liq_attr_destroy(attributes);
    free(copy);
    free(indices);
    return status;
}
