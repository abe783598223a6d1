#ifndef OSPREY_JPEG_COEFFICIENTS_H
#define OSPREY_JPEG_COEFFICIENTS_H

// Where a decompressor keeps its whole-image coefficient arrays (progressive and multi-scan files): private to this
// target.

#include <stddef.h>
#include "libraries.h"

/// The coefficient arrays of one decompressor and libjpeg's memory-manager methods they stand in for.
typedef struct {
    void (*realize)(j_common_ptr);
    void (*freePool)(j_common_ptr, int);
    void (*selfDestruct)(j_common_ptr);
    /// Arrays requested and not yet realized, newest first.
    struct jvirt_barray_control *requested;
    /// The buffers holding realized arrays, newest first.
    struct osprey_jpeg_coefficient_buffer *buffers;
} osprey_jpeg_coefficients;

/// Makes `info`'s whole-image coefficient arrays come from osprey_pixels_allocate, all of one realization in one
/// buffer: a large one is prefaulted in one call instead of page by page as libjpeg zeroes it, and recycled by the
/// next decode of a similar size instead of unmapped. Their total is checked against `info->mem->max_memory_to_use`
/// before anything is allocated (a limit error, as libjpeg's own manager would refuse it without backing store).
/// Call after jpeg_create_decompress and before jpeg_start_decompress; `arrays` must outlive jpeg_destroy_decompress,
/// and `info->err` must be an osprey_jpeg_error.
void osprey_jpeg_coefficients_install(osprey_jpeg_coefficients *arrays, j_decompress_ptr info);

#endif
