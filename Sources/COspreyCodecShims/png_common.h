#ifndef OSPREY_PNG_COMMON_H
#define OSPREY_PNG_COMMON_H

// Reading PNG from memory under an error handler that longjmps (private to this target).

#include <stddef.h>
#include <stdint.h>
#include "libraries.h"

/// The most libpng may allocate for one ancillary chunk (an ICC profile, EXIF): 8 MiB.
#define OSPREY_PNG_CHUNK_MALLOC_MAX (8u << 20)

/// The reader and the writer both start with the message buffer, so one error handler serves both.
typedef struct {
    char *message;
    const uint8_t *data;
    size_t size;
    size_t offset;
    /// Set when libpng asked for bytes past the end of the data.
    int hitEnd;
} osprey_png_reader;

/// Walks the chunk list of `data` (which starts with the PNG signature) and fails, with a message, when an ancillary
/// chunk declares more bytes than the data holds. libpng allocates a chunk's declared length before reading it, so
/// without this a 57-byte file declaring a 1 GiB sPLT chunk costs a 1 GiB allocation (found by fuzzing). A critical
/// chunk (IDAT) cut short is left to libpng: that is ordinary truncation. Returns 0 when every chunk fits.
int osprey_png_check_chunks(const uint8_t *data, size_t size, char *message);

/// libpng's error handler for readers and writers: copies the message to the `char *` that the error pointer's
/// struct starts with, then longjmps to png_jmpbuf (libpng requires that it not return).
void osprey_png_error(png_structp png, png_const_charp text);

/// libpng's warning handler: warnings are dropped, never printed to a server's stderr.
void osprey_png_warning(png_structp png, png_const_charp text);

/// Creates a read struct whose errors copy their message to `reader->message` and longjmp to png_jmpbuf, whose
/// warnings are dropped, and which reads from `reader`. NULL when libpng cannot allocate it.
png_structp osprey_png_create(osprey_png_reader *reader);

#endif
