#include "COspreyCodecShims.h"

#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <png.h>

// libpng's error handler must not return; ours records the message and longjmps to the shim's png_jmpbuf, which is
// the only way out of a failing png_read_* call.
typedef struct {
    const uint8_t *data;
    size_t size;
    size_t offset;
    char *message;
} osprey_png_reader;

static void osprey_png_error(png_structp png, png_const_charp text) {
    osprey_png_reader *reader = (osprey_png_reader *)png_get_error_ptr(png);
    snprintf(reader->message, OSPREY_MESSAGE_CAPACITY, "%s", text);
    png_longjmp(png, 1);
}

static void osprey_png_warning(png_structp png, png_const_charp text) {
    (void)png;
    (void)text;
}

static void osprey_png_read(png_structp png, png_bytep out, size_t length) {
    osprey_png_reader *reader = (osprey_png_reader *)png_get_io_ptr(png);
    if (length > reader->size - reader->offset) {
        png_error(png, "Read Error: unexpected end of data");
    }
    memcpy(out, reader->data + reader->offset, length);
    reader->offset += length;
}

int osprey_png_read_header(const uint8_t *data, size_t size, osprey_png_header *header, char *message) {
    osprey_png_reader reader = {data, size, 0, message};
    message[0] = '\0';
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &reader, osprey_png_error, osprey_png_warning);
    if (png == NULL) {
        snprintf(message, OSPREY_MESSAGE_CAPACITY, "png_create_read_struct failed");
        return -1;
    }
    png_infop info = png_create_info_struct(png);
    if (info == NULL) {
        png_destroy_read_struct(&png, NULL, NULL);
        snprintf(message, OSPREY_MESSAGE_CAPACITY, "png_create_info_struct failed");
        return -1;
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_read_struct(&png, &info, NULL);
        return -1;
    }
    png_set_read_fn(png, &reader, osprey_png_read);
    png_read_info(png, info);
    header->width = png_get_image_width(png, info);
    header->height = png_get_image_height(png, info);
    header->bitDepth = png_get_bit_depth(png, info);
    header->colorType = png_get_color_type(png, info);
    header->interlaced = png_get_interlace_type(png, info) != PNG_INTERLACE_NONE ? 1 : 0;
    png_destroy_read_struct(&png, &info, NULL);
    return 0;
}
