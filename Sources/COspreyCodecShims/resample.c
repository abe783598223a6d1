// The inner loops of Osprey's separable resize (Resampler.swift keeps the geometry, the weights and the ring of
// filtered rows): pixels as four floats each (colour in lanes 0-2, gray in lane 0, alpha in lane 3), filtered along
// a row, summed down the ring's rows, and converted from and to bytes. Four lanes at a time everywhere, eight (two
// pixels) where the processor has AVX2. Both widths add in the same order and neither contracts a product into a
// fused multiply-add, so an image resizes to the same bytes on every x86-64.
#include "COspreyCodecShims.h"

#include <math.h>
#include <string.h>

#pragma clang fp contract(off)

typedef float four_floats __attribute__((vector_size(16)));

static inline four_floats load_four(const float *p) {
    four_floats v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void store_four(float *p, four_floats v) { memcpy(p, &v, sizeof v); }

// Output pixel x of a row: the weighted sum of its `counts[x]` source pixels from `starts[x]`. Four sums, one per tap
// modulo four, so that the additions do not wait on one another; then (tap 0 + tap 1) + (tap 2 + tap 3), and a last
// odd tap.
static void filter_row_four(const float *pixels, const intptr_t *starts, const intptr_t *counts, intptr_t offset,
                            const float *weights, uint32_t taps, uint32_t width, float *row) {
    for (uint32_t x = 0; x < width; x++) {
        const float *p = pixels + 4 * (starts[x] - offset);
        const float *w = weights + (size_t)x * taps;
        intptr_t count = counts[x], j = 0;
        four_floats a0 = {0}, a1 = {0}, b0 = {0}, b1 = {0};
        for (; j + 4 <= count; j += 4) {
            a0 += load_four(p + 4 * j) * w[j];
            a1 += load_four(p + 4 * j + 4) * w[j + 1];
            b0 += load_four(p + 4 * j + 8) * w[j + 2];
            b1 += load_four(p + 4 * j + 12) * w[j + 3];
        }
        if (j + 2 <= count) {
            a0 += load_four(p + 4 * j) * w[j];
            a1 += load_four(p + 4 * j + 4) * w[j + 1];
            j += 2;
        }
        four_floats sum = (a0 + a1) + (b0 + b1);
        if (j < count) sum += load_four(p + 4 * j) * w[j];
        store_four(row + 4 * x, sum);
    }
}

// The values of sum_rows from `i` on, four at a time (what is left after the wider blocks).
static inline void sum_rows_from(const float *ring, uint32_t slots, size_t floats, uint32_t start, const float *weights,
                                 uint32_t count, float *sum, size_t i) {
    for (; i < floats; i += 4) {
        four_floats s = {0};
        uint32_t slot = start;
        for (uint32_t j = 0; j < count; j++) {
            s += load_four(ring + slot * floats + i) * weights[j];
            slot = slot + 1 == slots ? 0 : slot + 1;
        }
        store_four(sum + i, s);
    }
}

// `sum[i] = Σ weights[j] · row_j[i]` over `count` rows of the ring from source row `first` (row r in slot r % slots),
// `floats` values a row, j in order.
static void sum_rows_four(const float *ring, uint32_t slots, size_t floats, uint32_t first, const float *weights,
                          uint32_t count, float *sum) {
    uint32_t start = first % slots;
    size_t i = 0;
    for (; i + 16 <= floats; i += 16) {
        four_floats s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
        uint32_t slot = start;
        for (uint32_t j = 0; j < count; j++) {
            const float *r = ring + slot * floats + i;
            s0 += load_four(r) * weights[j];
            s1 += load_four(r + 4) * weights[j];
            s2 += load_four(r + 8) * weights[j];
            s3 += load_four(r + 12) * weights[j];
            slot = slot + 1 == slots ? 0 : slot + 1;
        }
        store_four(sum + i, s0);
        store_four(sum + i + 4, s1);
        store_four(sum + i + 8, s2);
        store_four(sum + i + 12, s3);
    }
    sum_rows_from(ring, slots, floats, start, weights, count, sum, i);
}

#if defined(__x86_64__)
#include <cpuid.h>

typedef float eight_floats __attribute__((vector_size(32)));

#define AVX2 __attribute__((target("avx2")))

AVX2 static inline eight_floats load_eight(const float *p) {
    eight_floats v;
    memcpy(&v, p, sizeof v);
    return v;
}

AVX2 static inline void store_eight(float *p, eight_floats v) { memcpy(p, &v, sizeof v); }

// Two weights, each over one pixel's four lanes.
AVX2 static inline eight_floats weight_pair(const float *w) {
    four_floats two = {0};
    memcpy(&two, w, 2 * sizeof(float));
    return __builtin_shufflevector(two, two, 0, 0, 0, 0, 1, 1, 1, 1);
}

AVX2 static inline four_floats low_half(eight_floats v) { return __builtin_shufflevector(v, v, 0, 1, 2, 3); }

AVX2 static inline four_floats high_half(eight_floats v) { return __builtin_shufflevector(v, v, 4, 5, 6, 7); }

// filter_row_four two pixels at a time: the low half of `a` is its tap-0 sum, the high half its tap-1 sum, and `b`
// taps 2 and 3, so that the sums are the same.
AVX2 static void filter_row_eight(const float *pixels, const intptr_t *starts, const intptr_t *counts,
                                  intptr_t offset, const float *weights, uint32_t taps, uint32_t width, float *row) {
    for (uint32_t x = 0; x < width; x++) {
        const float *p = pixels + 4 * (starts[x] - offset);
        const float *w = weights + (size_t)x * taps;
        intptr_t count = counts[x], j = 0;
        eight_floats a = {0}, b = {0};
        for (; j + 4 <= count; j += 4) {
            a += load_eight(p + 4 * j) * weight_pair(w + j);
            b += load_eight(p + 4 * j + 8) * weight_pair(w + j + 2);
        }
        if (j + 2 <= count) {
            a += load_eight(p + 4 * j) * weight_pair(w + j);
            j += 2;
        }
        four_floats sum = (low_half(a) + high_half(a)) + (low_half(b) + high_half(b));
        if (j < count) sum += load_four(p + 4 * j) * w[j];
        store_four(row + 4 * x, sum);
    }
}

AVX2 static void sum_rows_eight(const float *ring, uint32_t slots, size_t floats, uint32_t first,
                                const float *weights, uint32_t count, float *sum) {
    uint32_t start = first % slots;
    size_t i = 0;
    for (; i + 32 <= floats; i += 32) {
        eight_floats s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
        uint32_t slot = start;
        for (uint32_t j = 0; j < count; j++) {
            const float *r = ring + slot * floats + i;
            s0 += load_eight(r) * weights[j];
            s1 += load_eight(r + 8) * weights[j];
            s2 += load_eight(r + 16) * weights[j];
            s3 += load_eight(r + 24) * weights[j];
            slot = slot + 1 == slots ? 0 : slot + 1;
        }
        store_eight(sum + i, s0);
        store_eight(sum + i + 8, s1);
        store_eight(sum + i + 16, s2);
        store_eight(sum + i + 24, s3);
    }
    sum_rows_from(ring, slots, floats, start, weights, count, sum, i);
}

// 4 after osprey_resample_limit_lanes(4): the four-lane loops even where AVX2 is there.
static int lane_limit = 0;

// Whether the processor has AVX2 and the system saves its registers (asked once), and no limit says otherwise.
static int has_avx2(void) {
    static int known = 0;  // 1: no, 2: yes
    if (__atomic_load_n(&lane_limit, __ATOMIC_RELAXED) == 4) return 0;
    int value = __atomic_load_n(&known, __ATOMIC_RELAXED);
    if (value != 0) return value == 2;
    unsigned int a, b, c, d;
    value = 1;
    if (__get_cpuid(1, &a, &b, &c, &d) && (c & bit_OSXSAVE) && (c & bit_AVX)) {
        unsigned int low, high;
        __asm__("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
        if ((low & 0x6) == 0x6 && __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & bit_AVX2)) value = 2;
    }
    __atomic_store_n(&known, value, __ATOMIC_RELAXED);
    return value == 2;
}
#define WIDEST(name, ...) (has_avx2() ? name##_eight(__VA_ARGS__) : name##_four(__VA_ARGS__))
#else
static int lane_limit = 0;
#define WIDEST(name, ...) name##_four(__VA_ARGS__)
#endif

void osprey_resample_limit_lanes(uint32_t lanes) {
    __atomic_store_n(&lane_limit, lanes == 4 ? 4 : 0, __ATOMIC_RELAXED);
}

void osprey_resample_filter_row(const float *pixels, const intptr_t *starts, const intptr_t *counts, intptr_t offset,
                                const float *weights, uint32_t taps, uint32_t width, float *row) {
    WIDEST(filter_row, pixels, starts, counts, offset, weights, taps, width, row);
}

void osprey_resample_sum_rows(const float *ring, uint32_t slots, uint32_t width, uint32_t first,
                              const float *weights, uint32_t count, float *sum) {
    WIDEST(sum_rows, ring, slots, (size_t)width * 4, first, weights, count, sum);
}

void osprey_resample_widen(const uint8_t *source, uint32_t count, uint32_t channels, int premultiply,
                           float *pixels) {
    switch (channels) {
    case 4:
        for (uint32_t i = 0; i < count; i++, source += 4, pixels += 4) {
            float alpha = source[3];
            float scale = premultiply ? alpha * (1.0f / 255) : 1;
            pixels[0] = source[0] * scale;
            pixels[1] = source[1] * scale;
            pixels[2] = source[2] * scale;
            pixels[3] = alpha;
        }
        break;
    case 3:
        for (uint32_t i = 0; i < count; i++, source += 3, pixels += 4) {
            pixels[0] = source[0];
            pixels[1] = source[1];
            pixels[2] = source[2];
            pixels[3] = 255;
        }
        break;
    case 2:
        for (uint32_t i = 0; i < count; i++, source += 2, pixels += 4) {
            float alpha = source[1];
            pixels[0] = premultiply ? source[0] * (alpha * (1.0f / 255)) : source[0];
            pixels[1] = 0;
            pixels[2] = 0;
            pixels[3] = alpha;
        }
        break;
    default:
        for (uint32_t i = 0; i < count; i++, source += 1, pixels += 4) {
            pixels[0] = source[0];
            pixels[1] = 0;
            pixels[2] = 0;
            pixels[3] = 255;
        }
        break;
    }
}

// A lane to a byte: rounded half up and clamped (NaN to 0).
static inline uint8_t to_byte(float value) { return (uint8_t)fminf(fmaxf(value + 0.5f, 0), 255); }

// A premultiplied pixel's colour back over its alpha (clamped; a transparent pixel's colour is 0).
static inline float unpremultiplier(const float *pixel) {
    float alpha = fminf(fmaxf(pixel[3], 0), 255);
    return alpha > 0 ? 255 / alpha : 0;
}

void osprey_resample_narrow(const float *pixels, uint32_t count, uint32_t channels, int premultiplied,
                            uint8_t *target) {
    switch (channels) {
    case 4:
        for (uint32_t i = 0; i < count; i++, pixels += 4, target += 4) {
            float scale = premultiplied ? unpremultiplier(pixels) : 1;
            target[0] = to_byte(pixels[0] * scale);
            target[1] = to_byte(pixels[1] * scale);
            target[2] = to_byte(pixels[2] * scale);
            target[3] = to_byte(pixels[3]);
        }
        break;
    case 3:
        for (uint32_t i = 0; i < count; i++, pixels += 4, target += 3) {
            target[0] = to_byte(pixels[0]);
            target[1] = to_byte(pixels[1]);
            target[2] = to_byte(pixels[2]);
        }
        break;
    case 2:
        for (uint32_t i = 0; i < count; i++, pixels += 4, target += 2) {
            target[0] = to_byte(pixels[0] * (premultiplied ? unpremultiplier(pixels) : 1));
            target[1] = to_byte(pixels[3]);
        }
        break;
    default:
        for (uint32_t i = 0; i < count; i++, pixels += 4) target[i] = to_byte(pixels[0]);
        break;
    }
}
