#ifndef OSPREY_CODEC_SHIMS_H
#define OSPREY_CODEC_SHIMS_H

// The only C Osprey writes. libjpeg and libpng report errors by calling a handler that must not return: they expect
// the caller to longjmp out of it. Swift cannot call setjmp, so every entry point that can fail is wrapped here, each
// with its own jmp_buf on the C stack, and returns a status plus the library's own message.

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Room for a library error message, NUL-terminated. libjpeg's JMSG_LENGTH_MAX is 200.
#define OSPREY_MESSAGE_CAPACITY 256

/// What a JPEG header says, before any pixel is decoded.
typedef struct {
    uint32_t width;
    uint32_t height;
    /// Components in the file: 1 grayscale, 3 YCbCr/RGB, 4 CMYK/YCCK.
    int32_t components;
    /// libjpeg's J_COLOR_SPACE of the file.
    int32_t colorSpace;
    /// 1 when the file is progressive (SOF2/SOF6/SOF10/SOF14).
    int32_t progressive;
    /// 1 when the file uses arithmetic coding.
    int32_t arithmetic;
} osprey_jpeg_header;

/// Reads a JPEG header from memory. Returns 0 on success; otherwise -1 with `message` set to libjpeg's message.
int osprey_jpeg_read_header(const uint8_t *data, size_t size, osprey_jpeg_header *header, char *message);

/// What a PNG IHDR says, read through libpng (which checks the signature and the chunk CRC).
typedef struct {
    uint32_t width;
    uint32_t height;
    int32_t bitDepth;
    /// libpng's PNG_COLOR_TYPE_* value.
    int32_t colorType;
    /// 1 when the image is Adam7-interlaced.
    int32_t interlaced;
} osprey_png_header;

/// Reads a PNG header from memory. Returns 0 on success; otherwise -1 with `message` set to libpng's message.
int osprey_png_read_header(const uint8_t *data, size_t size, osprey_png_header *header, char *message);

/// The libjpeg-turbo version as the number the library was built with, e.g. 2001005 for 2.1.5.
int osprey_jpeg_turbo_version_number(void);

#ifdef __cplusplus
}
#endif

#endif
