#ifndef OSPREY_PNG_COMMON_H
#define OSPREY_PNG_COMMON_H

// Reading PNG from memory under an error handler that longjmps (private to this target).

#include <stddef.h>
#include <stdint.h>
#include <png.h>

typedef struct {
    const uint8_t *data;
    size_t size;
    size_t offset;
    char *message;
    /// Set when libpng asked for bytes past the end of the data.
    int hitEnd;
} osprey_png_reader;

/// Creates a read struct whose errors copy their message to `reader->message` and longjmp to png_jmpbuf, whose
/// warnings are dropped, and which reads from `reader`. NULL when libpng cannot allocate it.
png_structp osprey_png_create(osprey_png_reader *reader);

#endif
