#include "png_unfilter.h"

#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

// The filters are defined byte by byte over a left neighbour `a` (same channel, previous pixel), the byte above `b`
// and the byte above-left `c`, with zeros outside the image (PNG specification, section 9).

static void osprey_unfilter_sub(const uint8_t *in, uint8_t *out, size_t length, unsigned bpp) {
    for (size_t i = 0; i < bpp && i < length; i++) {
        out[i] = in[i];
    }
    for (size_t i = bpp; i < length; i++) {
        out[i] = (uint8_t)(in[i] + out[i - bpp]);
    }
}

static void osprey_unfilter_up(const uint8_t *in, const uint8_t *previous, uint8_t *out, size_t length) {
    for (size_t i = 0; i < length; i++) {
        out[i] = (uint8_t)(in[i] + previous[i]);
    }
}

static void osprey_unfilter_average(const uint8_t *in, const uint8_t *previous, uint8_t *out, size_t length,
                                    unsigned bpp) {
    for (size_t i = 0; i < bpp && i < length; i++) {
        out[i] = (uint8_t)(in[i] + (previous[i] >> 1));
    }
    for (size_t i = bpp; i < length; i++) {
        out[i] = (uint8_t)(in[i] + ((out[i - bpp] + previous[i]) >> 1));
    }
}

static inline int osprey_abs(int value) {
    return value < 0 ? -value : value;
}

// The predictor is whichever of a, b, c is nearest to a + b - c, ties going to a, then b.
static void osprey_unfilter_paeth_scalar(const uint8_t *in, const uint8_t *previous, uint8_t *out, size_t length,
                                         unsigned bpp) {
    for (size_t i = 0; i < bpp && i < length; i++) {
        out[i] = (uint8_t)(in[i] + previous[i]);  // a = c = 0: the predictor is b.
    }
    for (size_t i = bpp; i < length; i++) {
        int a = out[i - bpp], b = previous[i], c = previous[i - bpp];
        int pa = osprey_abs(b - c), pb = osprey_abs(a - c), pc = osprey_abs(a + b - 2 * c);
        int predictor = (pa <= pb && pa <= pc) ? a : (pb <= pc ? b : c);
        out[i] = (uint8_t)(in[i] + predictor);
    }
}

#if defined(__SSE2__)
// Paeth is serial from pixel to pixel, but the 3 or 4 channels of a pixel are independent: one pixel per step, its
// channels in 16-bit lanes. Loads and stores move exactly `bpp` bytes, so compacting in place stays correct.
static inline __attribute__((always_inline)) __m128i osprey_load_pixel(const uint8_t *pointer, unsigned bpp) {
    uint32_t value = 0;
    memcpy(&value, pointer, bpp);
    return _mm_unpacklo_epi8(_mm_cvtsi32_si128((int)value), _mm_setzero_si128());
}

static inline __attribute__((always_inline)) void osprey_store_pixel(uint8_t *pointer, __m128i lanes, unsigned bpp) {
    uint32_t value = (uint32_t)_mm_cvtsi128_si32(_mm_packus_epi16(lanes, lanes));
    memcpy(pointer, &value, bpp);
}

static inline __m128i osprey_abs16(__m128i value) {
    return _mm_max_epi16(value, _mm_sub_epi16(_mm_setzero_si128(), value));
}

// Always inlined into the wrappers below, so that `bpp` is a constant and each pixel's loads and stores are single
// moves rather than memcpy calls.
static inline __attribute__((always_inline)) void osprey_unfilter_paeth_sse2(const uint8_t *in,
                                                                             const uint8_t *previous, uint8_t *out,
                                                                             size_t length, unsigned bpp) {
    __m128i a = _mm_setzero_si128();
    __m128i c = _mm_setzero_si128();
    for (size_t i = 0; i + bpp <= length; i += bpp) {
        __m128i b = osprey_load_pixel(previous + i, bpp);
        __m128i filtered = osprey_load_pixel(in + i, bpp);
        __m128i bMinusC = _mm_sub_epi16(b, c);
        __m128i aMinusC = _mm_sub_epi16(a, c);
        __m128i pa = osprey_abs16(bMinusC);
        __m128i pb = osprey_abs16(aMinusC);
        __m128i pc = osprey_abs16(_mm_add_epi16(aMinusC, bMinusC));
        __m128i smallest = _mm_min_epi16(pa, _mm_min_epi16(pb, pc));
        // Start from c; take b where pb is smallest, then a where pa is (a wins ties, b beats c).
        __m128i takeB = _mm_cmpeq_epi16(pb, smallest);
        __m128i takeA = _mm_cmpeq_epi16(pa, smallest);
        __m128i predictor = _mm_or_si128(_mm_and_si128(takeB, b), _mm_andnot_si128(takeB, c));
        predictor = _mm_or_si128(_mm_and_si128(takeA, a), _mm_andnot_si128(takeA, predictor));
        // Byte-wise add: the high byte of each lane is 0 + 0, so the low byte wraps modulo 256 as PNG requires.
        a = _mm_add_epi8(filtered, predictor);
        osprey_store_pixel(out + i, a, bpp);
        c = b;
    }
}

static void osprey_unfilter_paeth_rgb(const uint8_t *in, const uint8_t *previous, uint8_t *out, size_t length) {
    osprey_unfilter_paeth_sse2(in, previous, out, length, 3);
}

static void osprey_unfilter_paeth_rgba(const uint8_t *in, const uint8_t *previous, uint8_t *out, size_t length) {
    osprey_unfilter_paeth_sse2(in, previous, out, length, 4);
}
#endif

int osprey_png_unfilter_row(int filter, const uint8_t *in, const uint8_t *previous, uint8_t *out, size_t length,
                            unsigned bytesPerPixel) {
    switch (filter) {
    case 0:
        if (out != in) {
            memmove(out, in, length);
        }
        return 0;
    case 1:
        osprey_unfilter_sub(in, out, length, bytesPerPixel);
        return 0;
    case 2:
        osprey_unfilter_up(in, previous, out, length);
        return 0;
    case 3:
        osprey_unfilter_average(in, previous, out, length, bytesPerPixel);
        return 0;
    case 4:
#if defined(__SSE2__)
        if (bytesPerPixel == 3) {
            osprey_unfilter_paeth_rgb(in, previous, out, length);
            return 0;
        }
        if (bytesPerPixel == 4) {
            osprey_unfilter_paeth_rgba(in, previous, out, length);
            return 0;
        }
#endif
        osprey_unfilter_paeth_scalar(in, previous, out, length, bytesPerPixel);
        return 0;
    default:
        return -1;
    }
}
