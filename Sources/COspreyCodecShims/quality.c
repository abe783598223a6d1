// The loops of SSIMULACRA 2 (Osprey's ImageQuality) over pixels, in C so that a debug build, which compiles Swift's
// SIMD types without specialising them, scores an image in a fraction of a second instead of seconds. Four lanes at
// a time with Clang's vector extensions; the Swift side keeps the scales, the rows and the weights.
#include "COspreyCodecShims.h"

#include <math.h>
#include <string.h>

// Four lanes: what an SSE register holds, so that these pass in registers on every x86-64 (eight would need AVX).
typedef float lanes __attribute__((vector_size(16)));
typedef unsigned int unsigned_lanes __attribute__((vector_size(16)));
#define LANES 4

static inline lanes load(const float *p) {
    lanes v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void store(float *p, lanes v) { memcpy(p, &v, sizeof v); }

static inline lanes splat(float value) { return (lanes){value, value, value, value}; }

static inline float lane_sum(lanes v) { return (v[0] + v[1]) + (v[2] + v[3]); }

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

// Cube roots of values of at least libjxl's bias: an estimate from the exponent bits, then two Halley steps (each
// triples the correct digits), to single precision; several times faster than cbrtf.
static inline lanes cube_root(lanes value) {
    unsigned_lanes bits;
    memcpy(&bits, &value, sizeof bits);
    bits = bits / 3 + 709921077u;
    lanes root;
    memcpy(&root, &bits, sizeof root);
    for (int i = 0; i < 2; i++) {
        lanes cube = root * root * root;
        root *= (cube + 2 * value) / (2 * cube + value);
    }
    return root;
}

static inline float cube_root_one(float value) { return cube_root(splat(value))[0]; }

float osprey_quality_cube_root(float value) { return value > 0 ? cube_root_one(value) : 0; }

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

void osprey_quality_xyb(const float *red, const float *green, const float *blue, size_t count, float *x, float *y,
                        float *b) {
    const float root_of_bias = cube_root_one(BIAS);
    size_t i = 0;
    // Rescaled as SSIMULACRA 2 does: X × 14 + 0.42, Y + 0.01, B − Y + 0.55, all within about 0–1.
    for (; i + LANES <= count; i += LANES) {
        lanes r = load(red + i), g = load(green + i), bl = load(blue + i);
        lanes mixed0 = cube_root(M00 * r + M01 * g + M02 * bl + BIAS) - root_of_bias;
        lanes mixed1 = cube_root(M10 * r + M11 * g + M12 * bl + BIAS) - root_of_bias;
        lanes mixed2 = cube_root(M20 * r + M21 * g + M22 * bl + BIAS) - root_of_bias;
        lanes luma = 0.5f * (mixed0 + mixed1);
        store(x + i, 0.5f * (mixed0 - mixed1) * 14 + 0.42f);
        store(y + i, luma + 0.01f);
        store(b + i, (mixed2 - luma) + 0.55f);
    }
    for (; i < count; i++) {
        float mixed0 = cube_root_one(M00 * red[i] + M01 * green[i] + M02 * blue[i] + BIAS) - root_of_bias;
        float mixed1 = cube_root_one(M10 * red[i] + M11 * green[i] + M12 * blue[i] + BIAS) - root_of_bias;
        float mixed2 = cube_root_one(M20 * red[i] + M21 * green[i] + M22 * blue[i] + BIAS) - root_of_bias;
        float luma = 0.5f * (mixed0 + mixed1);
        x[i] = 0.5f * (mixed0 - mixed1) * 14 + 0.42f;
        y[i] = luma + 0.01f;
        b[i] = (mixed2 - luma) + 0.55f;
    }
}

void osprey_quality_weighted_sum(const float *const *rows, const float *kernel, uint32_t width, float *output) {
    // The kernel is symmetric: taps k and 10 - k share a weight.
    uint32_t x = 0;
    for (; x + LANES <= width; x += LANES) {
        lanes sum = load(rows[5] + x) * kernel[5];
        for (int k = 0; k < 5; k++) sum += (load(rows[k] + x) + load(rows[10 - k] + x)) * kernel[k];
        store(output + x, sum);
    }
    for (; x < width; x++) {
        float sum = rows[5][x] * kernel[5];
        for (int k = 0; k < 5; k++) sum += (rows[k][x] + rows[10 - k][x]) * kernel[k];
        output[x] = sum;
    }
}

void osprey_quality_multiply(const float *a, const float *b, uint32_t width, float *output) {
    for (uint32_t x = 0; x < width; x++) output[x] = a[x] * b[x];
}

static inline lanes positive(lanes v) { return __builtin_elementwise_max(v, splat(0)); }

void osprey_quality_error_sums(const float *reference, const float *distorted, const float *mean1,
                               const float *mean2, const float *sigma11, const float *sigma22, const float *sigma12,
                               uint32_t width, double *sums) {
    const float c2 = 0.0009f;
    lanes s1 = splat(0), s4 = splat(0), a1 = splat(0), a4 = splat(0), d1 = splat(0), d4 = splat(0);
    uint32_t x = 0;
    for (; x + LANES <= width; x += LANES) {
        lanes mu1 = load(mean1 + x), mu2 = load(mean2 + x);
        lanes difference = mu1 - mu2;
        lanes numerator_m = 1 - difference * difference;
        lanes numerator_s = 2 * (load(sigma12 + x) - mu1 * mu2) + c2;
        lanes denominator_s = (load(sigma11 + x) - mu1 * mu1) + (load(sigma22 + x) - mu2 * mu2) + c2;
        // SSIM without its luminance denominator, as an error (1 − SSIM), never below zero.
        lanes error = positive(1 - numerator_m * numerator_s / denominator_s);
        s1 += error;
        lanes squared = error * error;
        s4 += squared * squared;
        // > 0: the distorted image has an edge where the reference is smooth (ringing, banding, blocks);
        // < 0: the reverse (blurring, smearing).
        lanes ratio = (1 + __builtin_elementwise_abs(load(distorted + x) - mu2)) /
                          (1 + __builtin_elementwise_abs(load(reference + x) - mu1)) -
                      1;
        lanes artifact = positive(ratio), lost = positive(-ratio);
        a1 += artifact;
        lanes artifact2 = artifact * artifact;
        a4 += artifact2 * artifact2;
        d1 += lost;
        lanes lost2 = lost * lost;
        d4 += lost2 * lost2;
    }
    float tail[6] = {0};
    for (; x < width; x++) {
        float mu1 = mean1[x], mu2 = mean2[x];
        float difference = mu1 - mu2;
        float numerator_m = 1 - difference * difference;
        float numerator_s = 2 * (sigma12[x] - mu1 * mu2) + c2;
        float denominator_s = (sigma11[x] - mu1 * mu1) + (sigma22[x] - mu2 * mu2) + c2;
        float error = fmaxf(1 - numerator_m * numerator_s / denominator_s, 0);
        float ratio = (1 + fabsf(distorted[x] - mu2)) / (1 + fabsf(reference[x] - mu1)) - 1;
        float artifact = fmaxf(ratio, 0), lost = fmaxf(-ratio, 0);
        tail[0] += error;
        tail[1] += error * error * error * error;
        tail[2] += artifact;
        tail[3] += artifact * artifact * artifact * artifact;
        tail[4] += lost;
        tail[5] += lost * lost * lost * lost;
    }
    sums[0] += lane_sum(s1) + tail[0];
    sums[1] += lane_sum(s4) + tail[1];
    sums[2] += lane_sum(a1) + tail[2];
    sums[3] += lane_sum(a4) + tail[3];
    sums[4] += lane_sum(d1) + tail[4];
    sums[5] += lane_sum(d4) + tail[5];
}
