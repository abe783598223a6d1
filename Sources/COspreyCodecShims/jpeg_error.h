#ifndef OSPREY_JPEG_ERROR_H
#define OSPREY_JPEG_ERROR_H

// The error manager every libjpeg call in the shims runs under (private to this target).

#include <setjmp.h>
#include <stddef.h>
#include "libraries.h"

typedef struct {
    struct jpeg_error_mgr base;
    jmp_buf jump;
    char *message;
    /// Set when libjpeg warned that the data ended early (JWRN_JPEG_EOF).
    int sawPrematureEnd;
    /// The decoder reading the scan in libjpeg's stead (jpeg_huffman.h), or NULL: libjpeg calls it with the
    /// decompressor alone, whose error manager this is.
    struct osprey_jpeg_huffman *huffman;
} osprey_jpeg_error;

/// Installs the error manager on `info` (call before jpeg_create_*): errors longjmp to `error->jump` with the message
/// copied to `message`; warnings are counted, never printed.
void osprey_jpeg_error_install(osprey_jpeg_error *error, struct jpeg_decompress_struct *info, char *message);

#endif
