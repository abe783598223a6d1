#include "png_common.h"
#include "COspreyCodecShims.h"

#include <setjmp.h>
#include <stdio.h>
#include <string.h>

// libpng's error handler must not return; ours records the message and longjmps to the shim's png_jmpbuf, which is
// the only way out of a failing png_read_* call.
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
        reader->hitEnd = 1;
        png_error(png, "Read Error: unexpected end of data");
    }
    memcpy(out, reader->data + reader->offset, length);
    reader->offset += length;
}

png_structp osprey_png_create(osprey_png_reader *reader) {
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, reader, osprey_png_error, osprey_png_warning);
    if (png != NULL) {
        png_set_read_fn(png, reader, osprey_png_read);
    }
    return png;
}
