// The loops of SSIMULACRA 2 (Osprey's ImageQuality) over pixels, in C so that a debug build, which compiles Swift's
// SIMD types without specialising them, scores an image in a fraction of a second instead of seconds. The vector loops
// (quality_kernels.h) run four lanes at a time with Clang's vector extensions, eight on an x86-64 with AVX2 and
// sixteen with AVX-512 (the blurs being most of a score); the Swift side keeps the scales, the rows and the weights.
#include "COspreyCodecShims.h"

#include <math.h>
#include <string.h>

void osprey_quality_linear_planes(const uint8_t *pixels, size_t bytes_per_row, uint32_t width, uint32_t height,
                                  uint32_t bytes_per_pixel, int has_alpha, float background, const float *decoded,
                                  float *red, float *green, float *blue) {
    size_t index = 0;
    for (uint32_t y = 0; y < height; y++) {
        const uint8_t *row = pixels + y * bytes_per_row;
        for (uint32_t x = 0; x < width; x++, row += bytes_per_pixel, index++) {
            if (has_alpha && row[3] != 255) {
                float alpha = row[3] / 255.0f;
                float values[3];
                for (int c = 0; c < 3; c++) {
                    float encoded = alpha * row[c] / 255.0f + (1 - alpha) * background;
                    values[c] = encoded <= 0.04045f ? encoded / 12.92f : powf((encoded + 0.055f) / 1.055f, 2.4f);
                }
                red[index] = values[0];
                green[index] = values[1];
                blue[index] = values[2];
            } else {
                red[index] = decoded[row[0]];
                green[index] = decoded[row[1]];
                blue[index] = decoded[row[2]];
            }
        }
    }
}

void osprey_quality_halve(const float *input, uint32_t width, uint32_t height, float *output) {
    uint32_t half_width = (width + 1) / 2, half_height = (height + 1) / 2;
    for (uint32_t y = 0; y < half_height; y++) {
        const float *top = input + (size_t)(2 * y) * width;
        const float *bottom = input + (size_t)(2 * y + 1 < height ? 2 * y + 1 : height - 1) * width;
        float *out = output + (size_t)y * half_width;
        for (uint32_t x = 0; x < half_width; x++) {
            uint32_t left = 2 * x, right = 2 * x + 1 < width ? 2 * x + 1 : width - 1;
            out[x] = (top[left] + top[right] + bottom[left] + bottom[right]) * 0.25f;
        }
    }
}

// libjxl's opsin absorbance matrix and bias.
#define M00 0.30f
#define M01 (1 - 0.078f - 0.30f)
#define M02 0.078f
#define M10 0.23f
#define M11 (1 - 0.078f - 0.23f)
#define M12 0.078f
#define M20 0.24342268924547819f
#define M21 0.20476744424496821f
#define M22 (1 - M20 - M21)
#define BIAS 0.0037930732552754493f


#define KERNEL(name) name##_four
#define VECTOR_BYTES 16
#define KERNEL_TARGET
#include "quality_kernels.h"
#undef KERNEL
#undef VECTOR_BYTES
#undef KERNEL_TARGET

#if defined(__x86_64__)
#include <cpuid.h>

#define KERNEL(name) name##_eight
#define VECTOR_BYTES 32
#define KERNEL_TARGET __attribute__((target("avx2")))
#include "quality_kernels.h"
#undef KERNEL
#undef VECTOR_BYTES
#undef KERNEL_TARGET

#define KERNEL(name) name##_sixteen
#define VECTOR_BYTES 64
#define KERNEL_TARGET __attribute__((target("avx512f")))
#include "quality_kernels.h"
#undef KERNEL
#undef VECTOR_BYTES
#undef KERNEL_TARGET

// The widest vectors the processor has and the system saves the registers of (XCR0's bits: SSE and AVX, then
// AVX-512's mask and upper registers), asked once: 16 lanes, 8 or 4.
static int lanes_available(void) {
    static int known = 0;
    int value = __atomic_load_n(&known, __ATOMIC_RELAXED);
    if (value != 0) return value;
    unsigned int a, b, c, d;
    value = 4;
    if (__get_cpuid(1, &a, &b, &c, &d) && (c & bit_OSXSAVE) && (c & bit_AVX)) {
        unsigned int low, high;
        __asm__("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
        if ((low & 0x6) == 0x6 && __get_cpuid_count(7, 0, &a, &b, &c, &d)) {
            if (b & bit_AVX2) value = 8;
            if ((b & bit_AVX512F) && (low & 0xe6) == 0xe6) value = 16;
        }
    }
    __atomic_store_n(&known, value, __ATOMIC_RELAXED);
    return value;
}
#define WIDEST(name, ...)                                                                                              \
    (lanes_available() == 16  ? name##_sixteen(__VA_ARGS__)                                                            \
     : lanes_available() == 8 ? name##_eight(__VA_ARGS__)                                                              \
                              : name##_four(__VA_ARGS__))
#else
#define WIDEST(name, ...) name##_four(__VA_ARGS__)
#endif

float osprey_quality_cube_root(float value) { return value > 0 ? cube_root_four(splat_four(value))[0] : 0; }

void osprey_quality_xyb(const float *red, const float *green, const float *blue, size_t count, float *x, float *y,
                        float *b) {
    WIDEST(xyb, red, green, blue, count, x, y, b);
}

void osprey_quality_weighted_sum(const float *const *rows, const float *kernel, uint32_t width, float *output) {
    WIDEST(weighted_sum, rows, kernel, width, output);
}

void osprey_quality_multiply(const float *a, const float *b, uint32_t width, float *output) {
    WIDEST(multiply, a, b, width, output);
}

void osprey_quality_error_sums(const float *reference, const float *distorted, const float *mean1,
                               const float *mean2, const float *sigma11, const float *sigma22, const float *sigma12,
                               uint32_t width, double *sums) {
    WIDEST(error_sums, reference, distorted, mean1, mean2, sigma11, sigma22, sigma12, width, sums);
}
