#include "png_common.h"
#include "COspreyCodecShims.h"

#include <setjmp.h>
#include <stdio.h>
#include <string.h>

// libpng's error handler must not return; ours records the message and longjmps to the shim's png_jmpbuf, which is
// the only way out of a failing png_read_* call.
void osprey_png_error(png_structp png, png_const_charp text) {
    char **message = (char **)png_get_error_ptr(png);
    snprintf(*message, OSPREY_MESSAGE_CAPACITY, "%s", text);
    png_longjmp(png, 1);
}

void osprey_png_warning(png_structp png, png_const_charp text) {
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

int osprey_png_check_chunks(const uint8_t *data, size_t size, char *message) {
    size_t offset = 8;
    while (offset + 8 <= size) {
        uint32_t length = (uint32_t)data[offset] << 24 | (uint32_t)data[offset + 1] << 16
                          | (uint32_t)data[offset + 2] << 8 | (uint32_t)data[offset + 3];
        const uint8_t *type = data + offset + 4;
        if (memcmp(type, "IEND", 4) == 0) {
            return 0;
        }
        uint64_t end = (uint64_t)offset + 12 + length;
        if (end > size) {
            // Lowercase first letter: ancillary.
            if ((type[0] & 0x20) != 0) {
                snprintf(message, OSPREY_MESSAGE_CAPACITY, "%.4s chunk declares %u bytes, beyond the end of the data",
                         (const char *)type, length);
                return -1;
            }
            return 0;
        }
        offset = (size_t)end;
    }
    return 0;
}

png_structp osprey_png_create(osprey_png_reader *reader) {
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, reader, osprey_png_error, osprey_png_warning);
    if (png == NULL) {
        return NULL;
    }
    png_set_read_fn(png, reader, osprey_png_read);
    // A chunk's length is read before its data: without a cap, a 57-byte file claiming a 1 GiB iTXt chunk makes
    // libpng allocate 1 GiB (found by fuzzing). Ancillary chunks larger than this are skipped as benign errors.
    png_set_chunk_malloc_max(png, OSPREY_PNG_CHUNK_MALLOC_MAX);
    // Bound how many ancillary chunks (sPLT, text, unknown) libpng keeps in memory.
    png_set_chunk_cache_max(png, 128);
    // Text and suggested-palette chunks are never used: skip them unread instead of allocating and inflating them.
    static const png_byte ignored[] = {'t', 'E', 'X', 't', '\0', 'z', 'T', 'X', 't', '\0', 'i', 'T', 'X', 't', '\0',
                                       's', 'P', 'L', 'T', '\0'};
    png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_NEVER, ignored, 4);
    return png;
}
