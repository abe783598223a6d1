#ifndef OSPREY_JPEG_HUFFMAN_H
#define OSPREY_JPEG_HUFFMAN_H

// Osprey's own reader of a sequential JPEG's Huffman-coded scan, in libjpeg's stead (private to this target).

#include <stddef.h>
#include <stdint.h>
#include "libraries.h"

/// The value the decoder longjmps to the error manager's jump buffer with when it gives a scan up: the data is not as
/// a clean file's (a code the tables lack, data that ends inside an interval or leaves bytes before a marker). libjpeg
/// recovers from such data in ways of its own (warnings, zeros, resynchronization), so the caller decodes the file
/// again with libjpeg's decoder, from the start.
#define OSPREY_JPEG_HUFFMAN_GAVE_UP 5

typedef struct osprey_jpeg_huffman osprey_jpeg_huffman;

/// Makes the scan of `info` read by Osprey's decoder: the same coefficients libjpeg's own decoder gives a clean file,
/// for less work (the scan unstuffed once, then table lookups that give a code and its value bits together, several to
/// a refill of the bit buffer). libjpeg still does everything else: IDCT, upsampling, colour conversion, markers.
/// Call after jpeg_start_decompress and before the first jpeg_read_scanlines, with `data` the bytes libjpeg's memory
/// source reads (`info->err` an osprey_jpeg_error). Returns the decoder (release it after jpeg_destroy_decompress),
/// or NULL, with libjpeg's decoder left in place, when the file is not a sequential Huffman-coded 8-bit JPEG with one
/// scan of every component, or its scan does not end in a marker with the restart markers libjpeg expects in between
/// (a truncated file is left to libjpeg, which reports it), or memory runs out.
osprey_jpeg_huffman *osprey_jpeg_huffman_install(j_decompress_ptr info, const uint8_t *data, size_t size);

/// Frees a decoder from osprey_jpeg_huffman_install (nothing when NULL).
void osprey_jpeg_huffman_release(osprey_jpeg_huffman *decoder);

#endif
