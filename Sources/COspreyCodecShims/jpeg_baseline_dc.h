#ifndef OSPREY_JPEG_BASELINE_DC_H
#define OSPREY_JPEG_BASELINE_DC_H

// A sequential JPEG's DC coefficients for a decode at scale 1/8: a copy of the file that keeps them alone where the
// others are not needed, or the 1/8 image made from them (private to this target).

#include <stddef.h>
#include <stdint.h>

/// A copy of the sequential (Huffman, 8-bit, one interleaved scan) JPEG `data` whose blocks of the components marked
/// in `dcOnly` (indexed by component id) keep their DC coefficient alone: the same pixels at 1/8 for less decoding.
/// Returns the copy's length and sets *copy (free() it), or 0 with *copy NULL when the file is not of that kind, its
/// scan does not read cleanly to the end, or `cancelled` (when not NULL) became non-zero: the file is then decoded as
/// it is.
size_t osprey_jpeg_baseline_without_ac(const uint8_t *data, size_t size, const uint8_t dcOnly[256],
                                       const int32_t *cancelled, uint8_t **copy);

/// The DC samples of a sequential JPEG whose every component a decode at 1/8 scales by a 1×1 IDCT: one sample a block,
/// through that IDCT and libjpeg's range limit, each component's blocks padded to whole MCUs.
typedef struct {
    int components;  // 1 (gray) or 3 (YCbCr), in the frame's order; 0 when empty
    uint32_t maxH, maxV;
    uint8_t *samples[3];
    uint32_t samplesPerRow[3];
    uint32_t h[3], v[3];  // sampling factors
} osprey_jpeg_dc_image;

/// Reads the DC image of `data` (sequential, Huffman, 8-bit, one interleaved scan, 1 or 3 components, whole sampling
/// ratios), for a decode at 1/8 that scales every component by a 1×1 IDCT (the caller knows, from libjpeg): the image
/// (release it with osprey_jpeg_dc_image_release), or NULL when the file is not of that kind, does not read cleanly
/// to the end, `cancelled` became non-zero, or memory ran out.
osprey_jpeg_dc_image *osprey_jpeg_baseline_dc_image(const uint8_t *data, size_t size, const int32_t *cancelled);

/// Frees an image from osprey_jpeg_baseline_dc_image and its samples (nothing when NULL).
void osprey_jpeg_dc_image_release(osprey_jpeg_dc_image *image);

/// The 1/8 image's first `height` rows of `width` pixels (libjpeg's output size at 1/8), as libjpeg makes them: each
/// sample repeated over the pixels it covers and, with 3 components, YCbCr converted to RGB. 0 when out of memory.
int osprey_jpeg_dc_image_rows(const osprey_jpeg_dc_image *image, uint8_t *pixels, size_t bytesPerRow, uint32_t width,
                               uint32_t height);

#endif
