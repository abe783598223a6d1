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

int osprey_png_encode(const uint8_t *pixels, uint32_t width, uint32_t height, uint32_t components, uint64_t bytesPerRow,
                      int32_t compressionLevel, uint8_t **output, uint64_t *outputSize, char *message) {
    static const int colorTypes[] = {PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA, PNG_COLOR_TYPE_RGB,
                                     PNG_COLOR_TYPE_RGB_ALPHA};
    osprey_png_writer writer = {message, NULL, 0, 0};
    message[0] = '\0';
    *output = NULL;
    *outputSize = 0;
    OSPREY_OPEN(png, message);
    if (components < 1 || components > 4) {
        snprintf(message, OSPREY_MESSAGE_CAPACITY, "unsupported component count %u", components);
        return OSPREY_ERROR;
    }
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
    png_set_IHDR(png, info, width, height, 8, colorTypes[components - 1], PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (uint32_t y = 0; y < height; y++) {
        png_write_row(png, pixels + (uint64_t)y * bytesPerRow);
    }
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    *output = writer.data;
    *outputSize = writer.size;
    return OSPREY_OK;
}
